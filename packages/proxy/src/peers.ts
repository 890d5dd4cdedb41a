// Peer LBs as seen from this one. Each peer's GET /admin/peer (PeerReport) is polled on an interval
// with the shared bearer token: its per-replica in-flight tokens are added to queued_tokens here so
// LBs do not herd onto one replica, its availability and queue length drive SkyLB forwarding, and its
// prefix snapshot feeds the peer index. Forwarded requests go out over a keep-alive pool per peer.
import { Pool } from "undici";
import type { Logger } from "pino";
import { safeParsePeerReport, type PeerConfig, type PeerReport } from "@meridian/protocol";
import { nextRttEwma } from "./replicas";

/** A report older than this many poll intervals no longer counts (peer presumed down). */
const STALE_AFTER_INTERVALS = 3;

export class PeerRuntime {
  readonly pool: Pool;
  readonly origin: string;
  readonly basePath: string;
  report: PeerReport | null = null;
  reportAt: number | null = null;
  rttMs: number | null = null;
  lastError: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    public config: PeerConfig,
    private readonly token: string | null,
    private readonly pollIntervalMs: number,
    private readonly snapshotKeys: number,
    private readonly logger: Logger,
    private readonly onReport: (peer: PeerRuntime, report: PeerReport) => void,
    connectTimeoutMs: number,
    maxConnections: number,
  ) {
    const url = new URL(config.url);
    this.origin = url.origin;
    this.basePath = url.pathname.replace(/\/+$/, "");
    this.pool = new Pool(this.origin, { connections: maxConnections, connectTimeout: connectTimeoutMs, keepAliveTimeout: 30_000 });
  }

  get id(): string {
    return this.config.id;
  }

  /** A report we can act on: recent enough to trust. */
  freshReport(now: number): PeerReport | null {
    if (this.report === null || this.reportAt === null) return null;
    return now - this.reportAt > STALE_AFTER_INTERVALS * this.pollIntervalMs ? null : this.report;
  }

  start(): Promise<void> {
    const first = this.poll();
    this.timer = setInterval(() => void this.poll(), this.pollIntervalMs);
    this.timer.unref();
    return first;
  }

  async poll(): Promise<void> {
    if (this.closed) return;
    const started = performance.now();
    try {
      const headers: Record<string, string> = {};
      if (this.token) headers["authorization"] = `Bearer ${this.token}`;
      const { statusCode, body } = await this.pool.request({
        method: "GET",
        path: `${this.basePath}/admin/peer?snapshot=${this.snapshotKeys}`,
        headers,
        signal: AbortSignal.timeout(Math.max(1_000, this.pollIntervalMs)),
      });
      const text = await body.text();
      if (statusCode !== 200) throw new Error(`peer report returned ${statusCode}`);
      const parsed = safeParsePeerReport(JSON.parse(text));
      if (!parsed.success) throw parsed.error;
      this.rttMs = nextRttEwma(this.rttMs, performance.now() - started);
      this.report = parsed.data;
      this.reportAt = Date.now();
      if (this.lastError !== null) this.logger.info({ peer: this.id }, "peer reachable again");
      this.lastError = null;
      this.onReport(this, parsed.data);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (this.lastError === null) this.logger.warn({ peer: this.id, error: message }, "peer poll failed");
      this.lastError = message;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.pool.destroy();
  }
}
