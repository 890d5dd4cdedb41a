// The I/O of one replica: its undici pools, the RTT probe and the metrics scrape on their own timers
// with their own timeouts. What the probes and scrapes find is reported to the balancer, which hands it
// to the LB core; this file decides nothing. Request traffic and probes use separate pools, so a hung
// replica neither delays another replica's probes nor lets busy data connections inflate its RTT.
import type { Pool } from "undici";
import type { Limits, Probes, ReplicaConfig } from "@meridian/protocol";
import type { EngineCacheScrape, ScrapedLoad } from "@meridian/routing";
import { readCapped } from "./capped-body";
import { readEngineLoad } from "./engine-metrics";
import { RequestPool } from "./request-pool";

/** Probes and scrapes are few and carry their own deadlines (an AbortSignal each); of the limits,
 * only the connect timeout applies to them. */
function controlPoolOptions(limits: Limits): Pool.Options {
  return { connections: 2, connectTimeout: limits.connectTimeoutMs, pipelining: 1 };
}

/** An engine's /metrics is some 10–500 KB (SGLang, vLLM with histograms); a far larger one is an
 * exporter gone wrong, and parsing it would stall every request (capped-body.ts). */
const MAX_METRICS_BYTES = 4 * 1024 * 1024;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export type ReplicaObservation =
  | { kind: "probe"; ok: true; sampleMs: number }
  | { kind: "probe"; ok: false; error: string }
  | { kind: "scrape"; ok: true; load: ScrapedLoad; cache: EngineCacheScrape }
  | { kind: "scrape"; ok: false; error: string };

export class ReplicaRuntime {
  private readonly requests: RequestPool;
  private readonly control: RequestPool;
  readonly basePath: string;
  private rttTimer: NodeJS.Timeout | null = null;
  private scrapeTimer: NodeJS.Timeout | null = null;
  private closed = false;
  /** The scrape in flight: one at a time. A scrape's timeout (at least 1 s) can outlast a shorter
   * interval, and a slow answer to an older scrape applied after a newer one would read as counters
   * going back: an engine restart, which clears the replica's part of the index. (Probes may overlap:
   * each RTT sample stands on its own.) */
  private scraping: Promise<void> | null = null;
  /** The one scrape queued behind it: whoever asks meanwhile wants metrics read after asking. */
  private nextScrape: Promise<void> | null = null;

  constructor(
    public config: ReplicaConfig,
    private readonly lbRegion: () => string,
    private probes: Probes,
    limits: Limits,
    private readonly observe: (replicaId: string, observation: ReplicaObservation) => void,
  ) {
    const url = new URL(config.url);
    this.basePath = url.pathname.replace(/\/+$/, "");
    this.requests = new RequestPool(url.origin, limits);
    this.control = new RequestPool(url.origin, limits, controlPoolOptions);
  }

  get id(): string {
    return this.config.id;
  }

  /** The pool new requests to this replica go to. */
  get pool(): Pool {
    return this.requests.pool;
  }

  /** The pool probes and scrapes go to now. */
  get controlPool(): Pool {
    return this.control.pool;
  }

  /** The options that pool was built with (a test reads its connect timeout here). */
  get controlPoolOptions(): Readonly<Pool.Options> {
    return this.control.poolOptions;
  }

  /** Starts the timers; resolves once the first probe and the first scrape have answered either way. */
  start(): Promise<void> {
    const first = Promise.all([this.probeRtt(), this.scrapeMetrics()]).then(() => undefined);
    this.startTimers();
    return first;
  }

  /** Applies new probe intervals without dropping the replica's state. */
  updateProbes(probes: Probes): void {
    const changed = probes.rttIntervalMs !== this.probes.rttIntervalMs || probes.scrapeIntervalMs !== this.probes.scrapeIntervalMs;
    this.probes = probes;
    if (!changed || this.closed) return;
    this.stopTimers();
    this.startTimers();
  }

  /** Applies new connection limits to the requests, probes and scrapes that follow (request-pool.ts):
   * a probe in flight finishes under the limits it started with. */
  updateLimits(limits: Limits): void {
    this.requests.applyLimits(limits);
    this.control.applyLimits(limits);
  }

  private startTimers(): void {
    this.rttTimer = setInterval(() => void this.probeRtt(), this.probes.rttIntervalMs);
    this.scrapeTimer = setInterval(() => void this.scrapeMetrics(), this.probes.scrapeIntervalMs);
    this.rttTimer.unref();
    this.scrapeTimer.unref();
  }

  private stopTimers(): void {
    if (this.rttTimer) clearInterval(this.rttTimer);
    if (this.scrapeTimer) clearInterval(this.scrapeTimer);
  }

  private probeTimeoutMs(intervalMs: number): number {
    return Math.min(5_000, Math.max(1_000, intervalMs));
  }

  /** Scrapes the engine's metrics, one scrape at a time, so observations reach the balancer in the
   * order the engine produced them. Asked while one is in flight, it resolves after a scrape that
   * starts once that one ends (its answer may predate what the caller knows), shared by every caller
   * meanwhile. */
  scrapeMetrics(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.scraping === null) {
      this.scraping = this.scrapeOnce().finally(() => {
        this.scraping = null;
      });
      return this.scraping;
    }
    this.nextScrape ??= this.scraping.then(() => {
      this.nextScrape = null;
      return this.scrapeMetrics();
    });
    return this.nextScrape;
  }

  async probeRtt(): Promise<void> {
    if (this.closed) return;
    const started = performance.now();
    let observation: ReplicaObservation;
    try {
      const { statusCode, body } = await this.control.pool.request({
        method: "GET",
        path: `${this.basePath}/health`,
        headers: { "x-meridian-src-region": this.lbRegion() },
        signal: AbortSignal.timeout(this.probeTimeoutMs(this.probes.rttIntervalMs)),
      });
      await body.dump();
      if (statusCode < 200 || statusCode >= 300) throw new Error(`health returned ${statusCode}`);
      observation = { kind: "probe", ok: true, sampleMs: performance.now() - started };
    } catch (error) {
      observation = { kind: "probe", ok: false, error: messageOf(error) };
    }
    this.report(observation);
  }

  private async scrapeOnce(): Promise<void> {
    let observation: ReplicaObservation;
    try {
      const { statusCode, body } = await this.control.pool.request({
        method: "GET",
        path: `${this.basePath}/metrics`,
        headers: { "x-meridian-src-region": this.lbRegion() },
        signal: AbortSignal.timeout(this.probeTimeoutMs(this.probes.scrapeIntervalMs)),
      });
      if (statusCode !== 200) {
        await body.dump();
        throw new Error(`metrics returned ${statusCode}`);
      }
      const text = await readCapped(body, MAX_METRICS_BYTES, "metrics");
      const { load, cache } = readEngineLoad(text, this.config.engine);
      observation = { kind: "scrape", ok: true, load, cache };
    } catch (error) {
      observation = { kind: "scrape", ok: false, error: messageOf(error) };
    }
    this.report(observation);
  }

  /** Hands an observation to the balancer. Probes and scrapes run on timers that drop their promise
   * (`void`), so an error thrown here would be an unhandled rejection, which ends a Node 20 process:
   * an observer that throws on a result is told it failed instead, and a throw on that is dropped. */
  private report(observation: ReplicaObservation): void {
    if (this.closed) return;
    try {
      this.observe(this.id, observation);
    } catch (error) {
      if (!observation.ok) return;
      try {
        this.observe(this.id, { kind: observation.kind, ok: false, error: `its result was refused: ${messageOf(error)}` });
      } catch {
        // Nothing left to tell: the process must outlive a broken observer.
      }
    }
  }

  /** The replica left the config (or its URL changed): probes stop, and its requests in flight
   * finish while it takes no new one. Resolves once they have. */
  retire(): Promise<void> {
    this.closed = true;
    this.stopTimers();
    void this.control.destroy();
    return this.requests.close();
  }

  /** Shutdown: ends everything at once, requests in flight included. */
  async close(): Promise<void> {
    this.closed = true;
    this.stopTimers();
    await Promise.all([this.requests.destroy(), this.control.destroy()]);
  }
}
