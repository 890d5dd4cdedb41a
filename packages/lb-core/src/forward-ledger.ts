// This LB's forwards that a peer LB's reports cannot show yet, kept by endpoint (the peer's URL), so
// that a peer removed and put back under its URL (a failover flap, a rollback) keeps counting the
// forwards booked on its earlier record, as sameEndpoint counts it the same LB (targets.ts).
//
// A forward is kept from its placement until it ends here, or until a report whose poll left one
// RTT after the forward's request started to leave: a report built before a forward reached the
// peer shows its replica free, and the peer counts the forward only once it has read the body. While
// it waits here for a connection to the peer, it has not left at all. A request leaving a replica
// that may still answer counts these against the peer's free replicas (PeerRecord.peerView's
// `freeNow`, redispatch.ts).

interface Forward {
  url: string;
  model: string | null;
  /** When its request started to leave for the peer; Infinity while it waits here for a connection. */
  left: number;
}

export class ForwardLedger {
  private readonly forwards = new Map<object, Forward>();
  /** How many forwards no report shows yet, by URL and by URL and model: a move asks per peer, per
   * stalled request, at every drain, so the count is kept rather than walked. */
  private readonly byUrl = new Map<string, number>();
  private readonly byUrlModel = new Map<string, number>();

  /** `request`, of `model`, was placed on the peer at `url`; it leaves when left() says. */
  placed(request: object, url: string, model: string | null): void {
    this.ended(request);
    const forward = { url, model, left: Number.POSITIVE_INFINITY };
    this.forwards.set(request, forward);
    this.count(forward, 1);
  }

  left(request: object, now: number): void {
    const forward = this.forwards.get(request);
    if (forward?.left === Number.POSITIVE_INFINITY) forward.left = now;
  }

  /** The forward ended here (answered, failed or moved): it takes no replica at the peer any more. */
  ended(request: object): void {
    const forward = this.forwards.get(request);
    if (forward === undefined) return;
    this.forwards.delete(request);
    this.count(forward, -1);
  }

  /** A report of the peer at `url` shows the forwards that left at or before `shownBefore`. */
  shown(url: string, shownBefore: number): void {
    if (!this.byUrl.get(url)) return;
    for (const [request, forward] of this.forwards) if (forward.url === url && forward.left <= shownBefore) this.ended(request);
  }

  /** The forwards to `url` that no report shows yet: of `model` only, when given. */
  unshown(url: string, model: string | null): number {
    return (model === null ? this.byUrl.get(url) : this.byUrlModel.get(urlModel(url, model))) ?? 0;
  }

  private count(forward: Forward, delta: number): void {
    bump(this.byUrl, forward.url, delta);
    if (forward.model !== null) bump(this.byUrlModel, urlModel(forward.url, forward.model), delta);
  }
}

const urlModel = (url: string, model: string): string => `${url}\u0000${model}`;

function bump(counts: Map<string, number>, key: string, delta: number): void {
  const next = (counts.get(key) ?? 0) + delta;
  if (next === 0) counts.delete(key);
  else counts.set(key, next);
}
