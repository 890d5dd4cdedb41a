// Per-request records and the run summary the CLI prints and the console reads.

import { percentileOfSorted, type Percentiles } from "./stats";

/** One completed request, as written to --jsonl (snake_case: it is a file format). */
export interface RequestRecord {
  id: number;
  trace_index: number;
  /** When the client sent it, ms on the virtual clock. */
  arrival_ms: number;
  /** Generator turns after a session's first: how long the client held it past its due time for the previous turn's answer. */
  turn_wait_ms?: number;
  client_region: string;
  /** The LB that dispatched it (the peer LB when forwarded). */
  lb: string;
  forwarded: boolean;
  replica: string;
  replica_region: string;
  input_tokens: number;
  output_tokens: number;
  predicted_cached_tokens: number;
  /** What the engine actually served from its prefix cache. */
  cached_tokens: number;
  /** Client-measured: to the first content token, including client→LB→replica RTT. */
  ttft_ms: number;
  e2e_ms: number;
  /** Mean inter-token latency of this request. */
  itl_ms: number;
  /** TTFT as the LB measures it (what the tuner is fed). */
  lb_ttft_ms: number;
  config_version: number;
  weights: { rtt: number; queue: number };
  reason: string | null;
}

/** A request an LB refused (503 queue full or wait exceeded, no replica): it counts in the offered load. */
export interface RefusedRecord {
  id: number;
  trace_index: number;
  /** When the client sent it, ms on the virtual clock. */
  arrival_ms: number;
  /** As RequestRecord's. */
  turn_wait_ms?: number;
  client_region: string;
  /** The LB the client sent it to, which answered the refusal (its own, or the peer's it forwarded to). */
  lb: string;
  input_tokens: number;
  output_tokens: number;
  /** The HTTP status the client got. */
  status: number;
  /** The refusal code (queue_full, queue_timeout, no_replica, ...). */
  code: string;
}

export interface ReplicaScrapeStats {
  id: string;
  scrapes: number;
  scrapesWithWaiting: number;
}

export interface FleetSummary {
  name: string;
  requests: number;
  /** Requests answered 2xx (every latency, share and cache figure is over these). */
  completed: number;
  /** Requests an LB refused: its hold queue was full, the wait bound passed, or no replica served them. */
  failed: number;
  failed_by_code: Record<string, number>;
  ttft_ms: Percentiles;
  /**
   * p95 TTFT over every offered request, a refused one counting as slower than any served one:
   * Infinity when more than 5 % were refused. What the tuner optimises (it scores a refusal as a
   * request without a first token), so a configuration cannot look fast by refusing its slow requests.
   */
  ttft_p95_offered_ms: number;
  e2e_ms: Percentiles;
  itl_ms_p50: number;
  /** Completed requests per second of virtual time, first arrival to last completion. */
  throughput_rps: number;
  /** Arrivals (served and refused) per second over the arrival span. */
  offered_rps: number;
  /** Prompt tokens per second offered over the arrival span (the paper's "Input (tok/s)"). */
  input_tokens_per_s: number;
  /** Engine truth: Σ cached prompt tokens / Σ prompt tokens. */
  cache_hit_rate: number;
  /** Σ min(predicted, actual) / Σ max(predicted, actual) over requests: 1 when every prediction was exact. */
  prediction_accuracy: number;
  /** Fraction of requests whose predicted cached tokens equalled the engine's. */
  prediction_exact_rate: number;
  replica_share: Record<string, number>;
  max_share: number;
  /** Per replica, the fraction of metric scrapes that saw requests waiting in the engine queue. */
  queued_scrape_fraction: Record<string, number>;
  /** Virtual time from the last arrival to the last completion (a backlog draining), ms. */
  drain_ms: number;
  /** Virtual duration of the run: first arrival to last completion, ms. */
  duration_ms: number;
  /**
   * Generator workloads only: how long a session's turns (after its first) were held past their due
   * time until the previous turn's answer reached the client, over those turns, served or refused
   * (the live replay's summary `turnWaitMs`). Trace workloads have no turns and no such figure.
   */
  turn_wait_ms?: { p95: number; max: number };
}

export function summarize(
  name: string,
  records: readonly RequestRecord[],
  replicas: readonly ReplicaScrapeStats[],
  refused: readonly RefusedRecord[] = [],
): FleetSummary {
  const failed = refused.length;
  const failedByCode: Record<string, number> = {};
  const n = records.length;
  const ttft = new Float64Array(n);
  const e2e = new Float64Array(n);
  const itl: number[] = [];
  const counts = new Map<string, number>(replicas.map((r) => [r.id, 0]));
  let firstArrival = Infinity;
  let lastArrival = -Infinity;
  let lastDone = -Infinity;
  let inputTokens = 0;
  let cachedTokens = 0;
  let overlap = 0;
  let union = 0;
  let exact = 0;
  for (let i = 0; i < n; i++) {
    const r = records[i]!;
    ttft[i] = r.ttft_ms;
    e2e[i] = r.e2e_ms;
    if (r.output_tokens >= 2) itl.push(r.itl_ms);
    counts.set(r.replica, (counts.get(r.replica) ?? 0) + 1);
    if (r.arrival_ms < firstArrival) firstArrival = r.arrival_ms;
    if (r.arrival_ms > lastArrival) lastArrival = r.arrival_ms;
    const done = r.arrival_ms + r.e2e_ms;
    if (done > lastDone) lastDone = done;
    inputTokens += r.input_tokens;
    cachedTokens += r.cached_tokens;
    overlap += Math.min(r.predicted_cached_tokens, r.cached_tokens);
    union += Math.max(r.predicted_cached_tokens, r.cached_tokens);
    if (r.predicted_cached_tokens === r.cached_tokens) exact++;
  }
  // Refused requests were offered too: they count in the arrival span and the offered load.
  let offeredInputTokens = inputTokens;
  for (const r of refused) {
    failedByCode[r.code] = (failedByCode[r.code] ?? 0) + 1;
    offeredInputTokens += r.input_tokens;
    if (r.arrival_ms < firstArrival) firstArrival = r.arrival_ms;
    if (r.arrival_ms > lastArrival) lastArrival = r.arrival_ms;
  }
  const offered = n + failed;
  const waits: number[] = [];
  for (const r of records) if (r.turn_wait_ms !== undefined) waits.push(r.turn_wait_ms);
  for (const r of refused) if (r.turn_wait_ms !== undefined) waits.push(r.turn_wait_ms);
  const turnWaits = Float64Array.from(waits).sort();
  ttft.sort();
  e2e.sort();
  const itlSorted = Float64Array.from(itl).sort();
  const share: Record<string, number> = {};
  let maxShare = 0;
  for (const [id, c] of counts) {
    const s = n === 0 ? 0 : c / n;
    share[id] = s;
    if (s > maxShare) maxShare = s;
  }
  const queued: Record<string, number> = {};
  for (const r of replicas) queued[r.id] = r.scrapes === 0 ? 0 : r.scrapesWithWaiting / r.scrapes;
  const durationMs = n === 0 ? 0 : lastDone - firstArrival;
  const arrivalSpanS = offered <= 1 ? NaN : (lastArrival - firstArrival) / 1000;
  return {
    name,
    requests: offered,
    completed: n,
    failed,
    failed_by_code: { ...failedByCode },
    ttft_ms: { p50: percentileOfSorted(ttft, 50), p95: percentileOfSorted(ttft, 95), p99: percentileOfSorted(ttft, 99) },
    ttft_p95_offered_ms: offered === 0 ? Number.NaN : (ttft[Math.min(offered, Math.max(1, Math.ceil(0.95 * offered))) - 1] ?? Infinity),
    e2e_ms: { p50: percentileOfSorted(e2e, 50), p95: percentileOfSorted(e2e, 95), p99: percentileOfSorted(e2e, 99) },
    itl_ms_p50: percentileOfSorted(itlSorted, 50),
    throughput_rps: durationMs > 0 ? n / (durationMs / 1000) : NaN,
    offered_rps: offered / arrivalSpanS,
    input_tokens_per_s: offeredInputTokens / arrivalSpanS,
    cache_hit_rate: inputTokens === 0 ? 0 : cachedTokens / inputTokens,
    prediction_accuracy: union === 0 ? 1 : overlap / union,
    prediction_exact_rate: n === 0 ? 1 : exact / n,
    replica_share: share,
    max_share: maxShare,
    queued_scrape_fraction: queued,
    drain_ms: n === 0 ? 0 : lastDone - lastArrival,
    duration_ms: durationMs,
    ...(turnWaits.length > 0 ? { turn_wait_ms: { p95: percentileOfSorted(turnWaits, 95), max: turnWaits[turnWaits.length - 1]! } } : {}),
  };
}
