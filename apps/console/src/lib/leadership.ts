// Who leads the background duties (tuner, health, failover, config pushes) among the consoles, as
// the sidebar shows it: from the layout's server render, then from GET /api/health while the page
// is open (leadership changes when a console dies; a render-time value would never say so).

export interface LeadershipView {
  isLeader: boolean;
  leaderUrl: string | null;
  term: number;
}

/**
 * The leadership in a /api/health body (`{ ok: true, leader: { self, url, term } }`), or null for an
 * unhealthy console's `{ ok: false }` or anything else unexpected: the badge then keeps what it shows.
 */
export function leadershipFromHealth(body: unknown): LeadershipView | null {
  if (typeof body !== "object" || body === null) return null;
  const { ok, leader } = body as { ok?: unknown; leader?: unknown };
  if (ok !== true || typeof leader !== "object" || leader === null) return null;
  const { self, url, term } = leader as { self?: unknown; url?: unknown; term?: unknown };
  if (typeof self !== "boolean" || !(url === null || typeof url === "string") || typeof term !== "number" || !Number.isFinite(term)) return null;
  return { isLeader: self, leaderUrl: url, term };
}

/** The badge's text: this console, electing (no term yet) or the leader's address. */
export function leadershipLabel(view: LeadershipView): string {
  if (view.isLeader) return "Leader: this console";
  return view.term === 0 ? "Leader: electing…" : `Follower · leader ${view.leaderUrl ?? "(address not set)"}`;
}
