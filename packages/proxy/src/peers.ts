// The I/O of one peer LB: GET /admin/peer (a PeerReport) polled on an interval with this LB's
// read-only peer credential, timed so the LB core keeps an RTT estimate of the peer, and a keep-alive
// pool for requests forwarded to it. Polls have a connection of their own: on the forwards' pool they
// queued behind long streams holding every connection, and the peer looked down while it had room.
// One poll at a time: a timer tick while the last poll is still out is skipped, so a slow peer is
// not sent a pile of them. During a token rotation this LB holds two credentials and the peer may
// know either: a 401 moves to the next one, which is then used until it fails in turn. What a report
// means (in-flight tokens, availability, the prefix snapshot) is the LB core's business: this file
// only fetches, validates (a report from another LB than the configured one is a failed poll) and
// reports.
import type { Pool } from "undici";
import { safeParsePeerReport, type Limits, type PeerConfig, type PeerReport } from "@meridian/protocol";
import { readCapped } from "./capped-body";
import { RequestPool } from "./request-pool";

/** A report without its snapshot: a few KB of replica loads; this leaves room for hundreds of replicas. */
const MAX_REPORT_BASE_BYTES = 1024 * 1024;

/** The polls' pool: one connection (one poll is out at a time), kept apart from the forwards'. */
function pollPoolOptions(limits: Limits): Pool.Options {
  return { connections: 1, connectTimeout: limits.connectTimeoutMs, pipelining: 1 };
}

/** The headers of a request forwarded to a peer: its hop, whether its client presented a client key
 * (a region that requires keys admits only such forwards: client-keys.ts), the policy this LB routed
 * it by (the peer's telemetry names it: a fleet tuner that does not hold this LB's events samples the
 * peer's) and this LB's peer credential. */
export function forwardHeaders(hop: number, clientKeyed: boolean, policy: string, credential: string | null): Record<string, string> {
  return {
    "x-meridian-hop": String(hop),
    "x-meridian-entry-policy": policy,
    ...(clientKeyed ? { "x-meridian-client-keyed": "1" } : {}),
    ...(credential ? { authorization: `Bearer ${credential}` } : {}),
  };
}

export type PeerObservation = { ok: true; report: PeerReport; rttMs: number } | { ok: false; error: string };

export class PeerRuntime {
  private readonly requests: RequestPool;
  private readonly polls: RequestPool;
  /** The poll out now, if any. */
  private polling: Promise<void> | null = null;
  readonly basePath: string;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Index into peerCredentials() of the one the peer last accepted. */
  private preferred = 0;

  constructor(
    public config: PeerConfig,
    /** This LB's peer credentials, newest first. */
    private readonly peerCredentials: () => string[],
    private readonly pollIntervalMs: number,
    /** Block keys to ask for in the prefix snapshot (the LB core says how many it wants). */
    private readonly snapshotKeys: () => number,
    private readonly observe: (peerId: string, observation: PeerObservation) => void,
    limits: Limits,
  ) {
    const url = new URL(config.url);
    this.basePath = url.pathname.replace(/\/+$/, "");
    // The limits of a replica's pool: a forward is a request like any other (without them, undici's
    // 300 s defaults would apply to a peer that stops answering).
    this.requests = new RequestPool(url.origin, limits);
    this.polls = new RequestPool(url.origin, limits, pollPoolOptions);
  }

  get id(): string {
    return this.config.id;
  }

  /** The pool forwarded requests go to. */
  get pool(): Pool {
    return this.requests.pool;
  }

  /** Applies new connection limits to the requests that follow (request-pool.ts). */
  updateLimits(limits: Limits): void {
    this.requests.applyLimits(limits);
    this.polls.applyLimits(limits);
  }

  /**
   * Starts polling; resolves once the first poll answered either way. `firstPoll: "next-interval"`
   * leaves the first poll to the timer (and resolves at once): for a peer a config change just added.
   * The console pushes that change to every LB together, and a poll sent the moment this LB took it
   * can reach the peer before the peer took its own, which lists this LB's credential: a 401, logged
   * at warn on both sides (measured in 3 of 6 fresh demo starts).
   */
  start(firstPoll: "now" | "next-interval"): Promise<void> {
    this.timer = setInterval(() => {
      if (this.polling === null) void this.poll();
    }, this.pollIntervalMs);
    this.timer.unref();
    return firstPoll === "now" ? this.poll() : Promise.resolve();
  }

  /** The credential to present to this peer (null when this LB holds none). */
  credential(): string | null {
    return this.credentialAt(this.preferred);
  }

  private credentialAt(index: number): string | null {
    const credentials = this.peerCredentials();
    return credentials.length === 0 ? null : (credentials[index % credentials.length] as string);
  }

  /** Polls now, after the poll already out (if any) has ended, so the answer is at least this fresh. */
  async poll(): Promise<void> {
    while (this.polling !== null) await this.polling;
    if (this.closed) return;
    const polling = this.pollOnce().finally(() => {
      this.polling = null;
    });
    this.polling = polling;
    return polling;
  }

  private async pollOnce(): Promise<void> {
    let observation: PeerObservation;
    try {
      const used = this.preferred;
      const asked = this.snapshotKeys();
      let answer = await this.fetchReport(used, asked);
      const held = this.peerCredentials().length;
      if (answer.statusCode === 401 && held > 1) {
        const next = (used + 1) % held;
        answer = await this.fetchReport(next, asked);
        if (answer.statusCode === 200) this.preferred = next;
      }
      const { statusCode, text, started } = answer;
      if (statusCode !== 200) throw new Error(`peer report returned ${statusCode}`);
      const parsed = safeParsePeerReport(JSON.parse(text));
      if (!parsed.success) throw parsed.error;
      this.checkIdentity(parsed.data);
      const keys = parsed.data.snapshot?.keys.length ?? 0;
      if (keys > asked) throw new Error(`peer report holds ${keys} snapshot keys; ${asked} were asked for`);
      observation = { ok: true, report: parsed.data, rttMs: performance.now() - started };
    } catch (error) {
      observation = { ok: false, error: error instanceof Error ? error.message : String(error) };
    }
    if (!this.closed) this.observe(this.id, observation);
  }

  /** The URL may reach another LB than the one configured (an ingress in front of several, a stale
   * URL after a move): its load and prefix snapshot would be taken for this peer's. A failed poll.
   * The report's region is not checked: a renamed region reaches each LB in its own push, so a peer
   * may report the old name for a while, and this LB routes by the region configured for the peer. */
  private checkIdentity(report: PeerReport): void {
    const { id, url } = this.config;
    if (report.lbId !== id) throw new Error(`peer ${id} at ${url} answered as ${report.lbId}`);
  }

  private async fetchReport(credentialIndex: number, asked: number): Promise<{ statusCode: number; text: string; started: number }> {
    const started = performance.now();
    const credential = this.credentialAt(credentialIndex);
    const { statusCode, body } = await this.polls.pool.request({
      method: "GET",
      path: `${this.basePath}/admin/peer?snapshot=${asked}`,
      headers: credential ? { authorization: `Bearer ${credential}` } : {},
      signal: AbortSignal.timeout(Math.max(1_000, this.pollIntervalMs)),
    });
    // A report is its replicas' loads (a few KB) and the snapshot asked for (a key is at most 17 digits
    // and a comma): anything far larger is not a report this LB can afford to parse (capped-body.ts).
    return { statusCode, text: await readCapped(body, MAX_REPORT_BASE_BYTES + 20 * asked, "peer report"), started };
  }

  /** The peer left the config (or its URL changed): polls stop, and requests forwarded to it finish
   * while it takes no new one. Resolves once they have. */
  retire(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    void this.polls.destroy();
    return this.requests.close();
  }

  /** Shutdown: ends everything at once, forwarded requests included. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await Promise.all([this.requests.destroy(), this.polls.destroy()]);
  }
}
