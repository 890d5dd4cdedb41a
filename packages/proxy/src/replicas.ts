// Everything the LB knows about one replica at run time: its undici pools, the RTT probe, the metrics
// scrape, health, and this LB's in-flight counters. Each replica probes and scrapes on its own timers
// with its own timeouts, and request traffic and probes use separate pools, so a hung replica neither
// delays another replica's probes nor lets busy data connections inflate its own RTT.
import { Pool } from "undici";
import type { Logger } from "pino";
import type { Limits, Probes, ReplicaConfig } from "@meridian/protocol";
import type { ScrapedLoad } from "@meridian/routing";
import { readEngineLoad } from "./engine-metrics";

/** DESIGN.md: RTT EWMA smoothing factor; the first sample seeds the average. */
export const RTT_EWMA_ALPHA = 0.3;
/** A scrape older than this many intervals is stale: policies then see no scraped load at all. */
const STALE_AFTER_INTERVALS = 3;

export interface ScrapeRecord {
  ok: boolean;
  /** Wall-clock time of the last successful scrape. */
  at: number | null;
  error: string | null;
  load: ScrapedLoad | null;
}

export function nextRttEwma(previous: number | null, sampleMs: number): number {
  return previous === null ? sampleMs : RTT_EWMA_ALPHA * sampleMs + (1 - RTT_EWMA_ALPHA) * previous;
}

export class ReplicaRuntime {
  readonly pool: Pool;
  private readonly controlPool: Pool;
  readonly origin: string;
  readonly basePath: string;
  rttMs: number | null = null;
  healthy = false;
  /** Set once the first probe has answered either way, so startup can wait for it. */
  probed = false;
  consecutiveProbeFailures = 0;
  scrape: ScrapeRecord = { ok: false, at: null, error: null, load: null };
  /** Running count the engine admitted while it also had waiting requests (SkyLB full rule). */
  admittedConcurrency: number | null = null;
  inFlight = 0;
  /** Prompt tokens this LB has in flight on the replica. */
  queuedTokens = 0;
  /** Prompt tokens peer LBs report in flight on the replica (refreshed by the peer poller). */
  peerQueuedTokens = 0;
  requests = 0;
  predictedCachedSum = 0;
  actualCachedSum = 0;
  absErrorSum = 0;
  promptTokensSum = 0;
  private rttTimer: NodeJS.Timeout | null = null;
  private scrapeTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    public config: ReplicaConfig,
    private readonly lbRegion: () => string,
    private probes: Probes,
    limits: Limits,
    private readonly logger: Logger,
    private readonly onLoadChange: () => void,
  ) {
    const url = new URL(config.url);
    this.origin = url.origin;
    this.basePath = url.pathname.replace(/\/+$/, "");
    this.pool = new Pool(this.origin, {
      connections: limits.maxConnectionsPerReplica,
      connectTimeout: limits.connectTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      bodyTimeout: limits.bodyTimeoutMs,
      keepAliveTimeout: 30_000,
      pipelining: 1,
    });
    this.controlPool = new Pool(this.origin, { connections: 2, connectTimeout: limits.connectTimeoutMs, pipelining: 1 });
  }

  get id(): string {
    return this.config.id;
  }

  /** Scraped load, or null before the first scrape or once the last good one is stale. */
  freshLoad(now: number): ScrapedLoad | null {
    if (this.scrape.at === null || this.scrape.load === null) return null;
    return now - this.scrape.at > STALE_AFTER_INTERVALS * this.probes.scrapeIntervalMs ? null : this.scrape.load;
  }

  scrapeAgeMs(now: number): number | null {
    return this.scrape.at === null ? null : now - this.scrape.at;
  }

  /** The concurrency cap for the full rule: the operator's maxConcurrency, else what the engine admitted. */
  concurrencyCap(): number | null {
    return this.config.maxConcurrency ?? this.admittedConcurrency;
  }

  start(): Promise<void> {
    const first = Promise.all([this.probeRtt(), this.scrapeMetrics()]).then(() => undefined);
    this.rttTimer = setInterval(() => void this.probeRtt(), this.probes.rttIntervalMs);
    this.scrapeTimer = setInterval(() => void this.scrapeMetrics(), this.probes.scrapeIntervalMs);
    this.rttTimer.unref();
    this.scrapeTimer.unref();
    return first;
  }

  /** Applies new probe intervals without dropping the replica's state. */
  updateProbes(probes: Probes): void {
    const changed = probes.rttIntervalMs !== this.probes.rttIntervalMs || probes.scrapeIntervalMs !== this.probes.scrapeIntervalMs;
    this.probes = probes;
    if (!changed || this.closed) return;
    if (this.rttTimer) clearInterval(this.rttTimer);
    if (this.scrapeTimer) clearInterval(this.scrapeTimer);
    this.rttTimer = setInterval(() => void this.probeRtt(), probes.rttIntervalMs);
    this.scrapeTimer = setInterval(() => void this.scrapeMetrics(), probes.scrapeIntervalMs);
    this.rttTimer.unref();
    this.scrapeTimer.unref();
  }

  private probeTimeoutMs(intervalMs: number): number {
    return Math.min(5_000, Math.max(1_000, intervalMs));
  }

  async probeRtt(): Promise<void> {
    if (this.closed) return;
    const started = performance.now();
    try {
      const { statusCode, body } = await this.controlPool.request({
        method: "GET",
        path: `${this.basePath}/health`,
        headers: { "x-meridian-src-region": this.lbRegion() },
        signal: AbortSignal.timeout(this.probeTimeoutMs(this.probes.rttIntervalMs)),
      });
      await body.dump();
      if (statusCode < 200 || statusCode >= 300) throw new Error(`health returned ${statusCode}`);
      this.rttMs = nextRttEwma(this.rttMs, performance.now() - started);
      this.consecutiveProbeFailures = 0;
      if (!this.healthy) {
        this.healthy = true;
        if (this.probed) this.logger.info({ replica: this.id }, "replica healthy again");
        this.onLoadChange();
      }
    } catch (error) {
      this.consecutiveProbeFailures++;
      // Before the first success a replica is not yet trusted; after it, only a run of failures
      // takes it out, so one lost probe does not flap routing.
      if (this.healthy && this.consecutiveProbeFailures >= this.probes.unhealthyAfter) {
        this.healthy = false;
        this.logger.warn({ replica: this.id, error: String(error) }, "replica failed its health probes");
      }
    } finally {
      this.probed = true;
    }
  }

  async scrapeMetrics(): Promise<void> {
    if (this.closed) return;
    try {
      const { statusCode, body } = await this.controlPool.request({
        method: "GET",
        path: `${this.basePath}/metrics`,
        headers: { "x-meridian-src-region": this.lbRegion() },
        signal: AbortSignal.timeout(this.probeTimeoutMs(this.probes.scrapeIntervalMs)),
      });
      const text = await body.text();
      if (statusCode !== 200) throw new Error(`metrics returned ${statusCode}`);
      const { load } = readEngineLoad(text, this.config.engine);
      this.recordScrape(load, Date.now());
    } catch (error) {
      this.scrape = { ...this.scrape, ok: false, error: error instanceof Error ? error.message : String(error) };
    }
  }

  recordScrape(load: ScrapedLoad, now: number): void {
    if (load.waiting > 0 && load.running > 0) this.admittedConcurrency = load.running;
    this.scrape = { ok: true, at: now, error: null, load };
    this.onLoadChange();
  }

  /** Passive health: a refused or reset connection means the engine is gone; stop sending it work
   * until the probe sees it answer again. */
  markUnreachable(reason: string): void {
    if (!this.healthy) return;
    this.healthy = false;
    this.consecutiveProbeFailures = this.probes.unhealthyAfter;
    this.logger.warn({ replica: this.id, reason }, "replica unreachable; excluded until its probe recovers");
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.rttTimer) clearInterval(this.rttTimer);
    if (this.scrapeTimer) clearInterval(this.scrapeTimer);
    await Promise.all([this.pool.destroy(), this.controlPool.destroy()]);
  }
}
