// The I/O of one peer LB: GET /admin/peer (a PeerReport) polled on an interval with the shared bearer
// token, timed so the LB core keeps an RTT estimate of the peer, and a keep-alive pool for requests
// forwarded to it. What a report means (in-flight tokens, availability, the prefix snapshot) is the
// LB core's business: this file only fetches, validates and reports.
import { Pool } from "undici";
import { safeParsePeerReport, type PeerConfig, type PeerReport } from "@meridian/protocol";

export type PeerObservation = { ok: true; report: PeerReport; rttMs: number } | { ok: false; error: string };

export class PeerRuntime {
  readonly pool: Pool;
  readonly basePath: string;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    public config: PeerConfig,
    private readonly token: string | null,
    private readonly pollIntervalMs: number,
    /** Block keys to ask for in the prefix snapshot (the LB core says how many it wants). */
    private readonly snapshotKeys: () => number,
    private readonly observe: (peerId: string, observation: PeerObservation) => void,
    connectTimeoutMs: number,
    maxConnections: number,
  ) {
    const url = new URL(config.url);
    this.basePath = url.pathname.replace(/\/+$/, "");
    this.pool = new Pool(url.origin, { connections: maxConnections, connectTimeout: connectTimeoutMs, keepAliveTimeout: 30_000 });
  }

  get id(): string {
    return this.config.id;
  }

  /** Starts polling; resolves once the first poll answered either way. */
  start(): Promise<void> {
    const first = this.poll();
    this.timer = setInterval(() => void this.poll(), this.pollIntervalMs);
    this.timer.unref();
    return first;
  }

  async poll(): Promise<void> {
    if (this.closed) return;
    const started = performance.now();
    let observation: PeerObservation;
    try {
      const headers: Record<string, string> = {};
      if (this.token) headers["authorization"] = `Bearer ${this.token}`;
      const { statusCode, body } = await this.pool.request({
        method: "GET",
        path: `${this.basePath}/admin/peer?snapshot=${this.snapshotKeys()}`,
        headers,
        signal: AbortSignal.timeout(Math.max(1_000, this.pollIntervalMs)),
      });
      const text = await body.text();
      if (statusCode !== 200) throw new Error(`peer report returned ${statusCode}`);
      const parsed = safeParsePeerReport(JSON.parse(text));
      if (!parsed.success) throw parsed.error;
      observation = { ok: true, report: parsed.data, rttMs: performance.now() - started };
    } catch (error) {
      observation = { ok: false, error: error instanceof Error ? error.message : String(error) };
    }
    if (!this.closed) this.observe(this.id, observation);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.pool.destroy();
  }
}
