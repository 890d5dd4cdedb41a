// Refused credentials at the LB: every refusal is counted in
// meridian_lb_auth_refusals_total{surface, reason}, and logged at warn with the caller's address. A
// flood must not flood the log: refusals of one (surface, reason, address) are folded into one line
// per window, the next line saying how many were folded; and past LINES_PER_WINDOW lines of one
// (surface, reason) in a window, every further address folds into one line for "*" (a flood from more
// addresses than the tracked windows, easy from one IPv6 /64, otherwise logged every refusal).
import type { Logger } from "pino";
import { Counter, type Registry } from "prom-client";

/** admin: /admin/* without the console's token; peer: a peer credential outside what it may do;
 * client: an inference request without a valid client API key where one is required; metrics: GET
 * /metrics with a bearer trusted for neither the client series nor the admin API (metrics-access.ts). */
export type AuthSurface = "admin" | "peer" | "client" | "metrics";
export type RefusalReason = "missing" | "invalid" | "forbidden";

/** Every (surface, reason) a caller records: their series start at 0, so that increase() and the
 * refusal alerts (ops/prometheus) see the first refusal, as the LB's other event counters do. */
const RECORDED: readonly (readonly [AuthSurface, RefusalReason])[] = [
  ["admin", "missing"],
  ["admin", "invalid"],
  ["peer", "forbidden"],
  ["client", "missing"],
  ["client", "invalid"],
  ["metrics", "missing"],
  ["metrics", "invalid"],
];

const FOLD_WINDOW_MS = 10_000;
/** Addresses tracked at once; past it the oldest window is dropped (its count is lost, not the log). */
const MAX_TRACKED = 1_024;
/** Lines one (surface, reason) may log per window before its further addresses fold into "*". */
const LINES_PER_WINDOW = 100;
/** A logged path is cut to this: the caller chooses it, up to the header limit. */
const MAX_LOGGED_PATH = 256;

interface Window {
  startedAt: number;
  folded: number;
}

export class AuthRefusals {
  private readonly counter: Counter<"surface" | "reason">;
  private readonly windows = new Map<string, Window>();
  /** Lines logged per (surface, reason) in its current window. */
  private readonly budgets = new Map<string, { startedAt: number; lines: number }>();

  constructor(
    registry: Registry,
    private readonly logger: Logger,
  ) {
    this.counter = new Counter({
      name: "meridian_lb_auth_refusals_total",
      help: "Requests refused for their credential, by surface (admin, peer, client, metrics) and reason (missing, invalid, forbidden).",
      labelNames: ["surface", "reason"],
      registers: [registry],
    });
    for (const [surface, reason] of RECORDED) this.counter.inc({ surface, reason }, 0);
  }

  /** `now` times the folding window, a duration: callers pass the step-proof clock (core-clock.ts), or
   * a step of the system clock back would fold away every line for as long as the step. */
  record(surface: AuthSurface, reason: RefusalReason, details: { address: string; path: string; [detail: string]: string }, now: number): void {
    this.counter.inc({ surface, reason });
    const group = `${surface}|${reason}`;
    if (this.folds(`${group}|${details.address}`, now)) return;
    let budget = this.budgets.get(group);
    if (!budget || now - budget.startedAt >= FOLD_WINDOW_MS) {
      budget = { startedAt: now, lines: 0 };
      this.budgets.set(group, budget);
    }
    let logged: Record<string, string> = { ...details, path: details.path.slice(0, MAX_LOGGED_PATH) };
    let key = `${group}|${details.address}`;
    if (budget.lines >= LINES_PER_WINDOW) {
      key = `${group}|*`;
      if (this.folds(key, now)) return;
      logged = { ...logged, address: "*", note: `more than ${LINES_PER_WINDOW} addresses in ${FOLD_WINDOW_MS / 1_000} s` };
    }
    budget.lines += 1;
    const folded = this.windows.get(key)?.folded ?? 0;
    this.windows.delete(key);
    if (this.windows.size >= MAX_TRACKED) {
      const oldest = this.windows.keys().next().value;
      if (oldest !== undefined) this.windows.delete(oldest);
    }
    this.windows.set(key, { startedAt: now, folded: 0 });
    this.logger.warn({ surface, reason, ...logged, ...(folded > 0 ? { foldedSinceLastLine: folded } : {}) }, "refused a request's credential");
  }

  /** Whether `key` has a line in its current window: then this refusal only counts toward the next. */
  private folds(key: string, now: number): boolean {
    const window = this.windows.get(key);
    if (!window || now - window.startedAt >= FOLD_WINDOW_MS) return false;
    window.folded += 1;
    return true;
  }
}
