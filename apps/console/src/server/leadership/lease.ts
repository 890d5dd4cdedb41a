// Leadership by lease, the decisions only (no I/O, no clock of its own: `now` is passed in: the
// database server's clock, which every console reads alike; leader-elector.ts). The
// elector (leader-elector.ts) reads the lease row, asks decideLease what to do, and applies the
// answer as a compare-and-set on the row it read, so two consoles deciding at once cannot both win.
// - A console holding an unexpired lease renews it (same term).
// - A lease that expired (or was never taken, or was released) is taken with term + 1: the term is
//   the fencing token that the leader's writes carry (fence.ts).
// - Otherwise the console follows the holder.
// A leader acts as one only until its lease would expire as measured (on its own clock, a duration)
// from when it SENT its last successful renewal, less a margin, so it stops its duties before a
// follower can take over even if the renewal's reply came late. A leader paused past that margin
// can still overlap its successor for a moment; fencing keeps the deposed one's writes out
// (apps/console/README.md, "Two consoles").
import "server-only";

/** The lease row as stored (console_leases). */
export interface LeaseRow {
  holder: string;
  holderUrl: string | null;
  term: number;
  expiresAt: number;
}

export interface LeaseTiming {
  /** How long a lease lasts after each renewal. */
  ttlMs: number;
  /** How often the leader renews and followers look; also the leader's safety margin. */
  renewEveryMs: number;
}

/** The default timing: a killed leader is replaced within ttl + renewEvery = 7.5 s (issue: ≤ 10 s). */
export const DEFAULT_LEASE_TIMING: LeaseTiming = { ttlMs: 6_000, renewEveryMs: 1_500 };

export type LeaseDecision =
  /** Extend my lease: expiresAt = now + ttl, same term. */
  | { kind: "renew"; term: number; expiresAt: number }
  /** Take the lease (free, released or expired): term + 1. */
  | { kind: "acquire"; term: number; expiresAt: number }
  /** Someone else holds an unexpired lease. */
  | { kind: "follow"; leader: string; leaderUrl: string | null; term: number; expiresAt: number };

export function decideLease(row: LeaseRow, me: string, now: number, timing: LeaseTiming): LeaseDecision {
  const expiresAt = now + timing.ttlMs;
  if (row.holder === me && row.expiresAt > now) return { kind: "renew", term: row.term, expiresAt };
  if (row.holder === "" || row.expiresAt <= now || row.holder === me) return { kind: "acquire", term: row.term + 1, expiresAt };
  return { kind: "follow", leader: row.holder, leaderUrl: row.holderUrl, term: row.term, expiresAt: row.expiresAt };
}

/** Until when a leader whose renewal (sent at `sentAt`) succeeded may act as leader. */
export function leadsUntil(sentAt: number, timing: LeaseTiming): number {
  return sentAt + timing.ttlMs - timing.renewEveryMs;
}

/** Checks timing settings: the leader must get several chances to renew before its lease lapses. */
export function validateTiming(timing: LeaseTiming): LeaseTiming {
  if (!(timing.renewEveryMs > 0) || !(timing.ttlMs >= 3 * timing.renewEveryMs)) {
    throw new Error(`lease ttl (${timing.ttlMs} ms) must be at least 3× the renewal interval (${timing.renewEveryMs} ms)`);
  }
  return timing;
}
