// Refused requests in the audit log: failed logins (auth.login.failed), 401 and 403 (auth.denied)
// and rate-limited logins (auth.throttled), each with the true client address (client-address.ts),
// the HTTP status and the reason. All use the "auth." prefix, so the audit page finds them together.
//
// Failed logins are written one row each: the login throttle already bounds how many there can be.
// Denials and throttled attempts cost an attacker nothing, so a flood of them could fill the
// database; the same (action, actor, address) writes at most one row per window, and the next row
// says how many were folded into it (`repeated`).
import "server-only";
import type { Queryable } from "@meridian/db";
import { recordAudit } from "../audit-trail";

export type SecurityAction = "auth.login.failed" | "auth.denied" | "auth.throttled";

export interface SecurityEvent {
  action: SecurityAction;
  /** The session's user, or "anonymous". */
  actor: string;
  /** What was asked for: "user:admin" for a login, "trpc:lbs.failover", "api:/api/entrypoints". */
  target: string;
  address: string;
  status: number;
  reason: string;
}

interface WindowState {
  writtenAt: number;
  folded: number;
}

export class SecurityAuditor {
  private readonly windows = new Map<string, WindowState>();

  constructor(
    private readonly windowMs = 10_000,
    private readonly maxKeys = 5_000,
  ) {}

  /** Writes the event unless an equal one was written within the window; resolves to whether it
   * wrote. The window is decided before the write, so concurrent equal events still fold. */
  async record(q: Queryable, event: SecurityEvent, now: number = Date.now()): Promise<boolean> {
    let folded = 0;
    if (event.action !== "auth.login.failed") {
      const key = `${event.action}\u0000${event.actor}\u0000${event.address}`;
      const previous = this.windows.get(key);
      if (previous && now - previous.writtenAt < this.windowMs) {
        previous.folded += 1;
        return false;
      }
      folded = previous?.folded ?? 0;
      this.windows.delete(key);
      this.windows.set(key, { writtenAt: now, folded: 0 });
      if (this.windows.size > this.maxKeys) {
        const oldest = this.windows.keys().next().value;
        if (oldest !== undefined) this.windows.delete(oldest);
      }
    }
    // The audit row keeps the actor's name only; the role passed here is not stored.
    await recordAudit(
      q,
      { username: event.actor, role: "viewer" },
      event.action,
      event.target,
      null,
      {
        address: event.address,
        status: event.status,
        reason: event.reason,
        ...(folded > 0 ? { repeated: folded } : {}),
      },
      now,
    );
    return true;
  }
}

const KEY = Symbol.for("meridian.console.security-auditor");

/** One auditor per process (it must survive module re-evaluation, like the runtime). */
export function securityAuditor(): SecurityAuditor {
  const holder = globalThis as { [KEY]?: SecurityAuditor };
  holder[KEY] ??= new SecurityAuditor();
  return holder[KEY];
}
