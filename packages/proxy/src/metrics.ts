// Prometheus metrics for GET /metrics, on a Registry of our own so that two LBs in one process (tests,
// the demo) never share series. Gauges that mirror LB state are computed at scrape time by collect()
// rather than updated on the request path. Every metric of the LB is defined here (one module per
// process), so later series join these names; the refusal counter is registered on the same registry
// by auth-refusals.ts, beside the code that counts it, and the per-client-key counters on a registry
// of their own by client-metrics.ts, rendered only for a caller trusted with them (metrics-access.ts).
// The Node process metrics (process_*, nodejs_*) are per process, not per LB: one shared registry
// (process-metrics.ts), merged into each LB's scrape.
import { createRequire } from "node:module";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { REPLICA_STATES, type ReplicaStateName } from "@meridian/routing/types";
import { renderWithProcessMetrics } from "./process-metrics";
import { CacheMetrics, type CacheStates, replicaGauge } from "./cache-metrics";

export interface MetricsSources {
  replicaGauges(): { id: string; inFlight: number; queuedTokens: number; rttMs: number | null; healthy: boolean; state: ReplicaStateName }[];
  /** The configured peer LBs' ids. */
  peerIds(): string[];
  /** The config in force: identity, version, policy and weights. */
  config(): { lbId: string; region: string; policy: string; crossRegion: string; version: number; weights: { rtt: number; queue: number } };
  queueLength(): number;
  indexRoutes(): number;
  /** LB-wide Σ min(predicted, actual) / Σ max(predicted, actual), from the LB core; null before a
   * request's prediction could be checked (no replica reported cached tokens yet). */
  predictionAccuracy(): number | null;
  /** Each replica's cache truth (rolling accuracy, cache reports, its part of the index). */
  cacheStates: CacheStates;
}

/** The reasons the LB refuses a request before any replica received it (lb-core's failures, the
 * request reading and the client key check): their series start at 0, so the first refusal of each
 * shows in increase() and rate() (a series born at 1 has no increase). */
const REFUSAL_REASONS = [
  "bad_request",
  "body_timeout",
  "invalid_api_key",
  "unknown_model",
  "prompt_too_long",
  "no_replica",
  "upstream_error",
  "queue_full",
  "queue_timeout",
  "shutting_down",
  "routing_error",
];
const CUT_REASONS = ["upstream_failed", "shutting_down"];
/** Redispatch reasons off a replica, and off a peer LB (a forward has a first-byte deadline too). */
const REPLICA_REDISPATCH_REASONS = ["first_byte_deadline", "headers_timeout", "replica_unhealthy"];
const PEER_REDISPATCH_REASONS = ["first_byte_deadline", "headers_timeout", "peer_unhealthy"];

/** A target's `replica` label: the replica's id, or peer:<id> for a peer LB (a peer and a replica may
 * share an id). Every per-target counter labels alike, so one target's series line up across them. */
export function targetLabel(target: { kind: "replica" | "peer"; id: string }): string {
  return target.kind === "peer" ? `peer:${target.id}` : target.id;
}

const PROXY_VERSION = (createRequire(import.meta.url)("../package.json") as { version: string }).version;

// TTFT spans loopback (sub-ms) to cross-region prefill under load (seconds).
const LATENCY_BUCKETS_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export class ProxyMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<"policy" | "replica" | "status">;
  readonly ttft: Histogram<"replica">;
  readonly e2e: Histogram<"replica">;
  readonly forwarded: Counter<"peer">;
  readonly rejected: Counter<"reason">;
  readonly upstreamFailures: Counter<"replica" | "reason">;
  readonly retries: Counter<"replica">;
  readonly redispatched: Counter<"replica" | "reason">;
  readonly cutStreams: Counter<"reason">;
  readonly predictedCachedTokens: Counter;
  readonly actualCachedTokens: Counter;
  readonly predictionAbsErrorTokens: Counter;
  readonly predictionSamples: Counter;
  readonly cache: CacheMetrics;

  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    this.cache = new CacheMetrics(this.registry, sources.cacheStates);
    this.requests = new Counter({
      name: "meridian_lb_requests_total",
      help: "Requests answered by the LB, by policy, replica (or peer:<id>, or none) and HTTP status.",
      labelNames: ["policy", "replica", "status"],
      registers,
    });
    this.ttft = new Histogram({
      name: "meridian_lb_ttft_seconds",
      help: "Time from request arrival at the LB to the first content delta sent to the client.",
      labelNames: ["replica"],
      buckets: LATENCY_BUCKETS_SECONDS,
      registers,
    });
    this.e2e = new Histogram({
      name: "meridian_lb_e2e_seconds",
      help: "Time from request arrival at the LB to the end of the response.",
      labelNames: ["replica"],
      buckets: LATENCY_BUCKETS_SECONDS,
      registers,
    });
    this.forwarded = new Counter({
      name: "meridian_lb_forwarded_requests_total",
      help: "Requests forwarded to a peer LB (via-peer cross-region mode).",
      labelNames: ["peer"],
      registers,
    });
    this.rejected = new Counter({
      name: "meridian_lb_rejected_requests_total",
      help: "Requests refused before reaching a replica, by reason (failures at a replica or peer LB are meridian_lb_upstream_failures_total).",
      labelNames: ["reason"],
      registers,
    });
    for (const reason of REFUSAL_REASONS) this.rejected.inc({ reason }, 0);
    this.upstreamFailures = new Counter({
      name: "meridian_lb_upstream_failures_total",
      help: "Requests answered with an error after reaching a replica or peer LB (it failed or timed out, and no other could take the request), by the last one tried (replica id or peer:<id>) and reason.",
      labelNames: ["replica", "reason"],
      registers,
    });
    this.retries = new Counter({
      name: "meridian_lb_upstream_retries_total",
      help: "Requests retried on another target after a failure before any byte reached the client, by the failed replica (or peer:<id>).",
      labelNames: ["replica"],
      registers,
    });
    this.redispatched = new Counter({
      name: "meridian_lb_redispatched_requests_total",
      help: "Requests moved off a replica or peer LB before any byte reached the client, by replica (or peer:<id>) and reason: its first-byte deadline passed and another target could take it (first_byte_deadline), limits.headersTimeoutMs passed (headers_timeout), or the target turned unhealthy (replica_unhealthy, peer_unhealthy).",
      labelNames: ["replica", "reason"],
      registers,
      // At 0 for each configured replica and peer, so a target's first redispatch shows in increase().
      collect() {
        for (const replica of sources.replicaGauges()) for (const reason of REPLICA_REDISPATCH_REASONS) this.inc({ replica: replica.id, reason }, 0);
        for (const id of sources.peerIds()) for (const reason of PEER_REDISPATCH_REASONS) this.inc({ replica: targetLabel({ kind: "peer", id }), reason }, 0);
      },
    });
    this.cutStreams = new Counter({
      name: "meridian_lb_cut_streams_total",
      help: "Streams that ended with an SSE error event instead of their end, by reason (upstream_failed, shutting_down).",
      labelNames: ["reason"],
      registers,
    });
    for (const reason of CUT_REASONS) this.cutStreams.inc({ reason }, 0);
    this.predictedCachedTokens = new Counter({
      name: "meridian_lb_predicted_cached_tokens_total",
      help: "Cached prompt tokens predicted by the prefix index, over requests whose replica reported cached tokens.",
      registers,
    });
    this.actualCachedTokens = new Counter({
      name: "meridian_lb_actual_cached_tokens_total",
      help: "Cached prompt tokens reported by replicas (usage.prompt_tokens_details.cached_tokens), in the LB's prompt-token units (scaled by its estimate over the engine's prompt_tokens, at most the prompt).",
      registers,
    });
    this.predictionAbsErrorTokens = new Counter({
      name: "meridian_lb_prediction_abs_error_tokens_total",
      help: "Sum of |predicted - actual| cached tokens.",
      registers,
    });
    this.predictionSamples = new Counter({
      name: "meridian_lb_prediction_samples_total",
      help: "Requests whose replica reported cached tokens, so the prediction could be checked.",
      registers,
    });
    new Gauge({
      name: "meridian_lb_prediction_accuracy_ratio",
      help: "Sum of min(predicted, reported) over sum of max(predicted, reported) cached tokens over all checked requests (1 = exact; absent until a replica reported cached tokens).",
      registers,
      // No sample while nothing was checked (as the per-replica ratio): unknown is not "exact", and an
      // absent series reads "No data" on the dashboard, where NaN would still pass for a value.
      collect() {
        const accuracy = sources.predictionAccuracy();
        if (accuracy === null) this.remove();
        else this.set(accuracy);
      },
    });
    const replicas = () => sources.replicaGauges();
    replicaGauge(this.registry, "meridian_lb_in_flight_requests", "Requests this LB has in flight, by replica.", replicas, (r) => r.inFlight);
    replicaGauge(
      this.registry,
      "meridian_lb_queued_tokens",
      "Prompt tokens in flight on each replica: this LB's plus what peer LBs report.",
      replicas,
      (r) => r.queuedTokens,
    );
    replicaGauge(this.registry, "meridian_lb_replica_healthy", "1 when the replica passes its health probes, else 0.", replicas, (r) => (r.healthy ? 1 : 0));
    new Gauge({
      name: "meridian_lb_replica_state",
      help: "The replica's state in the LB's config, one series per state: 1 for the current one (enabled takes new requests, draining finishes what it has, disabled takes nothing).",
      labelNames: ["replica", "state"],
      registers,
      collect() {
        this.reset();
        for (const replica of sources.replicaGauges()) {
          for (const state of REPLICA_STATES) this.set({ replica: replica.id, state }, replica.state === state ? 1 : 0);
        }
      },
    });
    new Gauge({
      name: "meridian_lb_build_info",
      help: "Always 1; the labels name the meridian-proxy version and the Node.js version running it.",
      labelNames: ["version", "nodejs"],
      registers,
      collect() {
        this.reset();
        this.set({ version: PROXY_VERSION, nodejs: process.version }, 1);
      },
    });
    new Gauge({
      name: "meridian_lb_config_info",
      help: "Always 1; the labels name the LB, its region, its policy and its cross-region mode in the config in force.",
      labelNames: ["lb", "region", "policy", "cross_region"],
      registers,
      collect() {
        this.reset();
        const config = sources.config();
        this.set({ lb: config.lbId, region: config.region, policy: config.policy, cross_region: config.crossRegion }, 1);
      },
    });
    new Gauge({
      name: "meridian_lb_config_version",
      help: "Version of the config in force (the console numbers each LB's configs upward).",
      registers,
      collect() {
        this.set(sources.config().version);
      },
    });
    new Gauge({
      name: "meridian_lb_weight",
      help: "Cost weight in force, by term (rtt: W_rtt per ms of RTT, queue: W_queue per queued token).",
      labelNames: ["term"],
      registers,
      collect() {
        const { weights } = sources.config();
        this.set({ term: "rtt" }, weights.rtt);
        this.set({ term: "queue" }, weights.queue);
      },
    });
    replicaGauge(
      this.registry,
      "meridian_lb_probe_rtt_seconds",
      "EWMA (alpha 0.3) of the GET /health round trip from this LB to each replica.",
      replicas,
      (r) => (r.rttMs === null ? null : r.rttMs / 1000),
    );
    new Gauge({
      name: "meridian_lb_queue_length",
      help: "Requests held in the LB's FIFO queue waiting for an available replica.",
      registers,
      collect() {
        this.set(sources.queueLength());
      },
    });
    new Gauge({
      name: "meridian_lb_index_routes",
      help: "Block keys held by the prefix index.",
      registers,
      collect() {
        this.set(sources.indexRoutes());
      },
    });
  }

  /** The exposition text of this LB plus the process metrics (and `extra`'s series, such as the
   * per-client-key ones for a trusted caller), and its content type. */
  render(extra: Registry | null = null): Promise<{ text: string; contentType: string }> {
    return renderWithProcessMetrics(extra === null ? this.registry : Registry.merge([this.registry, extra]));
  }

  /** A request the LB answered with an error before any byte reached its client: refused before a
   * replica when it never reached one (no target), else failed at the last target it tried. */
  failed(target: { kind: "replica" | "peer"; id: string } | null, reason: string): void {
    if (target === null) this.rejected.inc({ reason });
    else this.upstreamFailures.inc({ replica: targetLabel(target), reason });
  }

  observePrediction(predicted: number, actual: number): void {
    this.predictedCachedTokens.inc(predicted);
    this.actualCachedTokens.inc(actual);
    this.predictionAbsErrorTokens.inc(Math.abs(predicted - actual));
    this.predictionSamples.inc();
  }
}
