// Refused credentials at the LB: every refusal is counted in
// meridian_lb_auth_refusals_total{surface, reason}, and logged at warn with the caller's address. A
// flood must not flood the log: refusals of one (surface, reason, address) are folded into one line
// per window, the next line saying how many were folded.
import type { Logger } from "pino";
import { Counter, type Registry } from "prom-client";

/** admin: /admin/* without the console's token; peer: a peer credential outside what it may do;
 * client: an inference request without a valid client API key where one is required. */
export type AuthSurface = "admin" | "peer" | "client";
export type RefusalReason = "missing" | "invalid" | "forbidden";

const FOLD_WINDOW_MS = 10_000;
/** Addresses tracked at once; past it the oldest window is dropped (its count is lost, not the log). */
const MAX_TRACKED = 1_024;

interface Window {
  startedAt: number;
  folded: number;
}

export class AuthRefusals {
  private readonly counter: Counter<"surface" | "reason">;
  private readonly windows = new Map<string, Window>();

  constructor(
    registry: Registry,
    private readonly logger: Logger,
  ) {
    this.counter = new Counter({
      name: "meridian_lb_auth_refusals_total",
      help: "Requests refused for their credential, by surface (admin, peer, client) and reason (missing, invalid, forbidden).",
      labelNames: ["surface", "reason"],
      registers: [registry],
    });
  }

  /** `now` times the folding window, a duration: callers pass the step-proof clock (core-clock.ts), or
   * a step of the system clock back would fold away every line for as long as the step. */
  record(surface: AuthSurface, reason: RefusalReason, details: { address: string; path: string; [detail: string]: string }, now: number): void {
    this.counter.inc({ surface, reason });
    const key = `${surface}|${reason}|${details.address}`;
    const window = this.windows.get(key);
    if (window && now - window.startedAt < FOLD_WINDOW_MS) {
      window.folded += 1;
      return;
    }
    const folded = window?.folded ?? 0;
    this.windows.delete(key);
    if (this.windows.size >= MAX_TRACKED) {
      const oldest = this.windows.keys().next().value;
      if (oldest !== undefined) this.windows.delete(oldest);
    }
    this.windows.set(key, { startedAt: now, folded: 0 });
    this.logger.warn({ surface, reason, ...details, ...(folded > 0 ? { foldedSinceLastLine: folded } : {}) }, "refused a request's credential");
  }
}
