// Rolling windows over the telemetry stream for the overview: time buckets of `bucketMs`, the last
// `bucketCount` of them kept. Pure (time comes from the events and the `now` arguments). A bucket
// holds the requests that ended in it, every figure of them (rate, errors, TTFT, shares): that is
// when an LB reports a request, and what the tuner scores. So a long stream's TTFT shows when the
// stream ends, not when its first token came; a chart by first-token time would keep changing
// buckets that look complete.
import "server-only";
import type { TelemetryEvent } from "@meridian/protocol";
// The tuner's nearest-rank percentile, so the overview's p95 is the same statistic the tuner scores.
import { percentile } from "@meridian/tuner";
import { LATEST_TTFT_MAX_AGE_MS, REPLICA_STATS_WINDOW_MS, STATS_BUCKET_MS } from "../../lib/stats-windows";

interface ReplicaAccumulator {
  requests: number;
  inputTokens: number;
  actualCachedTokens: number;
  /** Events where the replica reported cached tokens (the only ones a hit rate can use). */
  reportedInputTokens: number;
  /** Over those events: Σ predicted cached tokens, Σ min(predicted, actual), Σ max(predicted, actual). */
  predictedCachedTokens: number;
  overlap: number;
  union: number;
  reports: number;
}

function emptyAccumulator(): ReplicaAccumulator {
  return { requests: 0, inputTokens: 0, actualCachedTokens: 0, reportedInputTokens: 0, predictedCachedTokens: 0, overlap: 0, union: 0, reports: 0 };
}

interface Bucket {
  start: number;
  requests: number;
  errors: number;
  ttfts: number[];
  replicas: Map<string, ReplicaAccumulator>;
}

export interface TtftPoint {
  t: number;
  p50: number | null;
  p95: number | null;
}
/** Both rates per second over the time the bucket covered (its whole length once it is complete). */
export interface RequestPoint {
  t: number;
  rps: number;
  /** Failed requests per second (a status >= 400 or an error). */
  errorsPerS: number;
}
/** The TTFT of the newest complete bucket that measured one (see `RollingStats.latestTtft`). */
export interface LatestTtft {
  /** The bucket's start and length. */
  t: number;
  bucketMs: number;
  /** How long ago the bucket ended. */
  ageMs: number;
  /** Whether it ended at most `LATEST_TTFT_MAX_AGE_MS` ago; older, the pages say "no recent data". */
  recent: boolean;
  p50: number | null;
  p95: number | null;
}
export interface SharePoint {
  t: number;
  shares: Record<string, number>;
}
export interface ReplicaWindowStats {
  requests: number;
  share: number;
  cacheHitRate: number | null;
  /** Σ min(predicted, actual) / Σ max(predicted, actual) cached tokens: the simulator's and the LB's
   * definition (1 when every prediction was exact). */
  predictionAccuracy: number | null;
}
/** Per bucket and replica, Σ predicted and Σ reported cached tokens over the requests that reported. */
export interface CachePoint {
  t: number;
  replicas: Record<string, { predicted: number; actual: number }>;
}

/** Is this a failed request? A 2xx with no error text is a success. */
function isError(event: Pick<TelemetryEvent, "status" | "error">): boolean {
  return event.status >= 400 || event.error !== null;
}

export class RollingStats {
  private readonly buckets: Bucket[] = [];
  /** The earliest event time seen: before it there was no traffic to count, only no stats. */
  private firstEventAt = Infinity;

  constructor(
    readonly bucketMs = STATS_BUCKET_MS,
    readonly bucketCount = 120,
  ) {}

  /** Forgets everything (a hub that starts again is sent every LB's buffer anew). */
  clear(): void {
    this.buckets.length = 0;
    this.firstEventAt = Infinity;
  }

  add(event: TelemetryEvent, now: number = Date.now()): void {
    // A request counts when it ended (its arrival plus its E2E time): that is when the LB reports it,
    // so the newest buckets are complete up to the delivery lag alone. Counted at arrival, the last
    // seconds of every window waited for the requests still running (steady 10 req/s of 3 s requests
    // read 4–7). LB clocks may run slightly ahead; an event is never in the future of the console.
    const time = Math.min(event.time + event.e2eMs, now);
    const start = Math.floor(time / this.bucketMs) * this.bucketMs;
    const bucket = this.bucketAt(start, now);
    if (!bucket) return;
    this.firstEventAt = Math.min(this.firstEventAt, time);
    bucket.requests += 1;
    if (isError(event)) bucket.errors += 1;
    if (event.ttftMs !== null && !isError(event)) bucket.ttfts.push(event.ttftMs);
    if (event.replicaId !== null) {
      const acc = bucket.replicas.get(event.replicaId) ?? emptyAccumulator();
      acc.requests += 1;
      acc.inputTokens += event.inputTokens;
      if (event.actualCachedTokens !== null) {
        // LBs send the cached count in the units of inputTokens (the LB's estimate), capped at it; an LB
        // from before that sent the engine's own count, which a denser tokenizer put above the estimate
        // (a hit rate of 128 %). No prompt has more cached tokens than it has tokens.
        const actual = Math.min(event.actualCachedTokens, event.inputTokens);
        acc.actualCachedTokens += actual;
        acc.reportedInputTokens += event.inputTokens;
        acc.predictedCachedTokens += event.predictedCachedTokens;
        acc.overlap += Math.min(event.predictedCachedTokens, actual);
        acc.union += Math.max(event.predictedCachedTokens, actual);
        acc.reports += 1;
      }
      bucket.replicas.set(event.replicaId, acc);
    }
  }

  private bucketAt(start: number, now: number): Bucket | null {
    this.prune(now);
    const oldest = now - this.bucketMs * this.bucketCount;
    if (start < oldest) return null;
    // Buckets are kept sorted by start; events arrive nearly in order, so search from the end.
    for (let i = this.buckets.length - 1; i >= 0; i -= 1) {
      const bucket = this.buckets[i]!;
      if (bucket.start === start) return bucket;
      if (bucket.start < start) {
        const created: Bucket = { start, requests: 0, errors: 0, ttfts: [], replicas: new Map() };
        this.buckets.splice(i + 1, 0, created);
        return created;
      }
    }
    const created: Bucket = { start, requests: 0, errors: 0, ttfts: [], replicas: new Map() };
    this.buckets.unshift(created);
    return created;
  }

  private prune(now: number): void {
    const oldest = now - this.bucketMs * this.bucketCount;
    while (this.buckets.length > 0 && this.buckets[0]!.start + this.bucketMs <= oldest) this.buckets.shift();
  }

  private recent(now: number, windowMs: number): Bucket[] {
    this.prune(now);
    return this.buckets.filter((b) => b.start + this.bucketMs > now - windowMs);
  }

  /**
   * Requests per second over the last `windowMs`, to a bucket: the buckets that begin inside the
   * window, over the time from the first of them (or from the first event ever seen) to now. A bucket
   * that began before the window holds requests from before it, and counted whole over the window's
   * length it read steady traffic up to half again too high.
   */
  rps(now: number = Date.now(), windowMs = 10_000): number {
    this.prune(now);
    const from = Math.ceil((now - windowMs) / this.bucketMs) * this.bucketMs;
    const requests = this.buckets.reduce((sum, b) => (b.start >= from ? sum + b.requests : sum), 0);
    if (requests === 0) return 0;
    const span = Math.max(1_000, now - Math.max(from, this.firstEventAt));
    return requests / (span / 1000);
  }

  /** Errors over requests in the window; null with no request in it (no telemetry is not "0% errors"). */
  errorRate(now: number = Date.now(), windowMs = 60_000): number | null {
    const buckets = this.recent(now, windowMs);
    const requests = buckets.reduce((sum, b) => sum + b.requests, 0);
    const errors = buckets.reduce((sum, b) => sum + b.errors, 0);
    return requests === 0 ? null : errors / requests;
  }

  /** One point per bucket, oldest first, gaps filled so charts keep a steady time axis. */
  private series<T>(now: number, windowMs: number, point: (start: number, bucket: Bucket | undefined) => T): T[] {
    this.prune(now);
    const byStart = new Map(this.buckets.map((b) => [b.start, b]));
    const last = Math.floor(now / this.bucketMs) * this.bucketMs;
    const first = Math.max(last - windowMs + this.bucketMs, last - (this.bucketCount - 1) * this.bucketMs);
    const out: T[] = [];
    for (let start = first; start <= last; start += this.bucketMs) out.push(point(start, byStart.get(start)));
    return out;
  }

  ttftSeries(now: number = Date.now(), windowMs = 300_000): TtftPoint[] {
    return this.series(now, windowMs, (t, b) => {
      const sorted = b ? [...b.ttfts].sort((x, y) => x - y) : [];
      return { t, p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95) };
    });
  }

  requestSeries(now: number = Date.now(), windowMs = 300_000): RequestPoint[] {
    return this.series(now, windowMs, (t, b) => {
      // The current bucket is still filling: divide by the time it has covered so far (at least a
      // second, so a bucket a few ms old does not report a huge rate).
      const covered = Math.min(this.bucketMs, Math.max(1_000, now - t));
      return { t, rps: b ? b.requests / (covered / 1000) : 0, errorsPerS: b ? b.errors / (covered / 1000) : 0 };
    });
  }

  /**
   * The TTFT percentiles of the newest complete bucket that measured a TTFT, and how long ago it
   * ended. The bucket still filling is left out (its few first requests are not its percentiles);
   * null when no bucket the stats still keep measured one.
   */
  latestTtft(now: number = Date.now(), maxAgeMs = LATEST_TTFT_MAX_AGE_MS): LatestTtft | null {
    this.prune(now);
    for (let i = this.buckets.length - 1; i >= 0; i -= 1) {
      const b = this.buckets[i]!;
      const end = b.start + this.bucketMs;
      if (end > now || b.ttfts.length === 0) continue;
      const sorted = [...b.ttfts].sort((x, y) => x - y);
      const ageMs = now - end;
      return { t: b.start, bucketMs: this.bucketMs, ageMs, recent: ageMs <= maxAgeMs, p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95) };
    }
    return null;
  }

  shareSeries(now: number = Date.now(), windowMs = 300_000): SharePoint[] {
    return this.series(now, windowMs, (t, b) => {
      const shares: Record<string, number> = {};
      if (b) {
        const routed = [...b.replicas.values()].reduce((sum, acc) => sum + acc.requests, 0);
        for (const [id, acc] of b.replicas) shares[id] = routed === 0 ? 0 : acc.requests / routed;
      }
      return { t, shares };
    });
  }

  /** Predicted vs reported cached tokens per replica and bucket: where the LB's index and the engine
   * part ways (an engine restart or a flushed cache shows as predicted >> reported). */
  cacheSeries(now: number = Date.now(), windowMs = 300_000): CachePoint[] {
    return this.series(now, windowMs, (t, b) => {
      const replicas: CachePoint["replicas"] = {};
      if (b) {
        for (const [id, acc] of b.replicas) {
          if (acc.reports > 0) replicas[id] = { predicted: acc.predictedCachedTokens, actual: acc.actualCachedTokens };
        }
      }
      return { t, replicas };
    });
  }

  /** Per-replica share, cache hit rate and prediction accuracy over the last `windowMs`. */
  replicaStats(now: number = Date.now(), windowMs = REPLICA_STATS_WINDOW_MS): Map<string, ReplicaWindowStats> {
    const totals = new Map<string, ReplicaAccumulator>();
    for (const bucket of this.recent(now, windowMs)) {
      for (const [id, acc] of bucket.replicas) {
        const total = totals.get(id) ?? emptyAccumulator();
        total.requests += acc.requests;
        total.inputTokens += acc.inputTokens;
        total.actualCachedTokens += acc.actualCachedTokens;
        total.reportedInputTokens += acc.reportedInputTokens;
        total.predictedCachedTokens += acc.predictedCachedTokens;
        total.overlap += acc.overlap;
        total.union += acc.union;
        total.reports += acc.reports;
        totals.set(id, total);
      }
    }
    const routed = [...totals.values()].reduce((sum, acc) => sum + acc.requests, 0);
    const out = new Map<string, ReplicaWindowStats>();
    for (const [id, acc] of totals) {
      out.set(id, {
        requests: acc.requests,
        share: routed === 0 ? 0 : acc.requests / routed,
        cacheHitRate: acc.reportedInputTokens === 0 ? null : acc.actualCachedTokens / acc.reportedInputTokens,
        predictionAccuracy: acc.reports === 0 ? null : acc.union > 0 ? acc.overlap / acc.union : 1,
      });
    }
    return out;
  }

  /** Live traffic over the window, in the simulator's terms, to set beside an offline experiment. */
  summary(now: number = Date.now(), windowMs = 300_000) {
    const buckets = this.recent(now, windowMs);
    const ttfts = buckets.flatMap((b) => b.ttfts).sort((a, b) => a - b);
    const shares: Record<string, number> = {};
    for (const [id, stats] of this.replicaStats(now, windowMs)) shares[id] = stats.share;
    return {
      windowMs,
      requests: buckets.reduce((sum, b) => sum + b.requests, 0),
      ttftMs: { p50: percentile(ttfts, 0.5), p95: percentile(ttfts, 0.95), p99: percentile(ttfts, 0.99) },
      rps: this.rps(now, windowMs),
      errorRate: this.errorRate(now, windowMs),
      cacheHitRate: this.cacheHitRate(now, windowMs),
      replicaShare: shares,
    };
  }

  /** Global cache hit rate over the window (reported cached tokens / their prompts' tokens). */
  cacheHitRate(now: number = Date.now(), windowMs = 60_000): number | null {
    let cached = 0;
    let input = 0;
    for (const stats of this.recent(now, windowMs)) {
      for (const acc of stats.replicas.values()) {
        cached += acc.actualCachedTokens;
        input += acc.reportedInputTokens;
      }
    }
    return input === 0 ? null : cached / input;
  }
}
