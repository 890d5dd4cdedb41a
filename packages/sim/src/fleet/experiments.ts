// The three experiments behind `meridian-sim compare | tune | sweep`, as functions returning
// JSON-ready objects (the CLI prints them; the console may call them directly).

import { DEFAULT_WEIGHTS, isPolicyName, type PolicyName, type Weights } from "@meridian/routing";
import { simulateFleet, type FleetRunResult, type TunerReport, type TunerRunOptions, type TunerTrajectoryPoint } from "./simulator";
import type { FleetSpec } from "./spec";
import { roundOrNull } from "./stats";
import type { FleetSummary, RefusedRecord, RequestRecord } from "./summary";
import {
  ONLINE_GORGO,
  type ComparePolicyRow,
  type IndexMode,
  type CompareJson,
  type SaturationRule,
  type SweepJson,
  type SweepRow,
  type TrajectoryJson,
  type TuneJson,
  type TunerJson,
  type OracleJson,
} from "./result-json";
import type { SimRequest } from "./workload";
import { SESSION_KEY_RULE } from "@meridian/workload";

/** The routers operators would run instead of gorgo (packages/routing/README.md, "Peer policies"). */
const PEER_POLICIES = ["sglang-cache-aware", "llm-d", "dynamo-kv"];
export const DEFAULT_COMPARE_POLICIES = ["gorgo", ...PEER_POLICIES, "least-load", "least-request", "prefix-cache", "session-affinity", "random"];
/** The policies of the paper's Table 3, and the peers. */
export const DEFAULT_SWEEP_POLICIES = ["gorgo", ...PEER_POLICIES, "session-affinity", "least-request"];

export function isComparePolicy(name: string): boolean {
  return name === ONLINE_GORGO || isPolicyName(name);
}

/** The online tuner's settings for gorgo-online (the simulator's TunerRunOptions). */
export type TunerSettings = TunerRunOptions;

export interface ExperimentBase {
  spec: FleetSpec;
  requests: readonly SimRequest[];
  seed: number;
  weights?: Weights;
  /** How the LBs know what the engines cache; default `learned`. */
  index?: IndexMode;
  /** Progress over all runs of the experiment: done and total requests. */
  onProgress?: (done: number, total: number, label: string) => void;
}

/** Runs one named policy (or gorgo-online) on the workload. */
export function runPolicy(
  base: ExperimentBase,
  name: string,
  tuner: TunerSettings,
  extra: { recordRequests?: boolean; onProgress?: (done: number, total: number) => void } = {},
): FleetRunResult {
  const policy: PolicyName = name === ONLINE_GORGO ? "gorgo" : (name as PolicyName);
  return simulateFleet(base.spec, base.requests, {
    policy,
    label: name,
    seed: base.seed,
    weights: base.weights ?? { ...DEFAULT_WEIGHTS },
    ...(base.index ? { index: base.index } : {}),
    ...(name === ONLINE_GORGO ? { tuner } : {}),
    ...(extra.recordRequests ? { recordRequests: true } : {}),
    ...(extra.onProgress ? { onProgress: extra.onProgress } : {}),
  });
}

export function compareRow(result: FleetRunResult, weights: Weights | null): ComparePolicyRow {
  const s = result.summary;
  const row: ComparePolicyRow = {
    name: result.label,
    requests: s.requests,
    completed: s.completed,
    failed: s.failed,
    failed_by_code: { ...s.failed_by_code },
    ttft_ms: roundPercentiles(s.ttft_ms),
    e2e_ms: roundPercentiles(s.e2e_ms),
    itl_ms_p50: roundOrNull(s.itl_ms_p50, 2),
    throughput_rps: roundOrNull(s.throughput_rps, 3),
    input_tokens_per_s: roundOrNull(s.input_tokens_per_s, 0),
    cache_hit_rate: roundOrNull(s.cache_hit_rate, 4),
    prediction_accuracy: roundOrNull(s.prediction_accuracy, 4),
    replica_share: Object.fromEntries(Object.entries(s.replica_share).map(([k, v]) => [k, roundOrNull(v, 4) ?? 0])),
    max_share: roundOrNull(s.max_share, 4) ?? 0,
    weights: result.policy === "gorgo" ? roundWeights(result.tuners[0]?.finalWeights ?? weights ?? DEFAULT_WEIGHTS) : null,
  };
  const tuner = result.tuners[0];
  if (tuner) row.tuner = tunerJson(tuner);
  return row;
}

/** The oracle columns of a compare row: the same policy run with `--index oracle`. */
export function oracleJson(result: FleetRunResult, oracle: FleetRunResult): OracleJson {
  const ours = result.summary.ttft_ms.p95;
  const best = oracle.summary.ttft_ms.p95;
  return {
    ttft_ms: roundPercentiles(oracle.summary.ttft_ms),
    cache_hit_rate: roundOrNull(oracle.summary.cache_hit_rate, 4),
    ttft_p95_gap: Number.isFinite(ours) && best > 0 ? roundOrNull((ours - best) / best, 4) : null,
  };
}

/**
 * Runs each policy; unless the LBs already read the engines' true caches (`index: "oracle"`) or
 * `oracle` is false, runs each again with the oracle index and reports the TTFT gap to it.
 */
export function compare(
  base: ExperimentBase,
  policies: readonly string[],
  tuner: TunerSettings,
  options: { onRecords?: (policy: string, served: RequestRecord[], refused: RefusedRecord[]) => void; oracle?: boolean } = {},
): { json: CompareJson; results: FleetRunResult[] } {
  const index = base.index ?? "learned";
  const withOracle = index !== "oracle" && options.oracle !== false;
  const runsPerPolicy = withOracle ? 2 : 1;
  const total = base.requests.length * policies.length * runsPerPolicy;
  const results: FleetRunResult[] = [];
  const rows: ComparePolicyRow[] = [];
  policies.forEach((name, i) => {
    const offset = i * runsPerPolicy * base.requests.length;
    const result = runPolicy(base, name, tuner, {
      recordRequests: options.onRecords !== undefined,
      ...(base.onProgress ? { onProgress: (done: number) => base.onProgress!(offset + done, total, name) } : {}),
    });
    if (options.onRecords && result.records) options.onRecords(name, result.records, result.refused ?? []);
    results.push(result);
    const row = compareRow(result, base.weights ?? { ...DEFAULT_WEIGHTS });
    if (withOracle) {
      const after = offset + base.requests.length;
      const oracle = runPolicy({ ...base, index: "oracle" }, name, tuner, {
        ...(base.onProgress ? { onProgress: (done: number) => base.onProgress!(after + done, total, `${name}@oracle`) } : {}),
      });
      row.oracle = oracleJson(result, oracle);
    }
    rows.push(row);
  });
  return {
    json: { preset: base.spec.name, seed: base.seed, index, session_key: SESSION_KEY_RULE, requests: base.requests.length, policies: rows },
    results,
  };
}

function roundWeights(w: Weights): Weights {
  return { rtt: roundOrNull(w.rtt, 4) ?? w.rtt, queue: roundOrNull(w.queue, 4) ?? w.queue };
}

export function trajectoryJson(p: TunerTrajectoryPoint): TrajectoryJson {
  return {
    step: p.step,
    at_ms: Math.round(p.atMs),
    samples: p.samplesSeen,
    kind: p.kind,
    weights: roundWeights(p.weights),
    p95_ttft_ms: roundOrNull(p.p95TtftMs, 1),
    e2e_p95_ms: roundOrNull(p.e2eP95Ms, 1),
    max_share: roundOrNull(p.maxShare, 4),
    accepted: p.accepted,
    guardrail: p.guardrail,
    sigma: roundOrNull(p.sigma, 4),
    incumbent: roundWeights(p.incumbent),
    converged: p.converged,
    ...(p.trial
      ? {
          trial: {
            id: p.trial.id,
            decision: p.trial.decision,
            reason: p.trial.reason,
            samples: p.trial.samples,
            triggered: p.trial.triggered,
            p95_ttft_ms: p.trial.p95TtftMs,
            p_better: p.trial.pBetter,
            alpha_at_look: p.trial.alphaAtLook,
          },
        }
      : {}),
  };
}

export function tunerJson(report: TunerReport): TunerJson {
  return {
    weights: roundWeights(report.finalWeights),
    initial_weights: report.initialWeights,
    samples_to_best: report.samplesToBest,
    samples_seen: report.samplesSeen,
    steps: report.steps,
    converged: report.converged,
    evaluation: report.evaluation,
    guardrails: report.guardrails,
    lb: report.lb,
    lbs: report.lbs,
    trajectory: report.trajectory.map(trajectoryJson),
  };
}

export function tune(base: ExperimentBase, tuner: TunerSettings): { json: TuneJson; result: FleetRunResult } {
  const result = runPolicy(base, ONLINE_GORGO, tuner, {
    ...(base.onProgress ? { onProgress: (done: number, total: number) => base.onProgress!(done, total, ONLINE_GORGO) } : {}),
  });
  const report = result.tuners[0];
  if (!report) throw new Error("tuning run produced no tuner report");
  const summary = compareRow(result, null);
  delete summary.tuner;
  return {
    json: { ...tunerJson(report), tuners: result.tuners.map(tunerJson), preset: base.spec.name, seed: base.seed, requests: base.requests.length, summary },
    result,
  };
}

export const DEFAULT_SATURATION_RULE: SaturationRule = { e2eP95Ms: 15_000, queuedScrapeFraction: 0.05, drainMs: 30_000 };

export function saturationReasons(summary: FleetSummary, rule: SaturationRule = DEFAULT_SATURATION_RULE): string[] {
  const reasons: string[] = [];
  if (summary.e2e_ms.p95 > rule.e2eP95Ms) reasons.push(`e2e_p95>${rule.e2eP95Ms}ms`);
  const maxQueued = Math.max(0, ...Object.values(summary.queued_scrape_fraction));
  if (maxQueued >= rule.queuedScrapeFraction) reasons.push(`waiting_at_${Math.round(maxQueued * 100)}%_of_scrapes`);
  if (summary.drain_ms > rule.drainMs) reasons.push(`drain>${rule.drainMs}ms`);
  if (summary.failed > 0) reasons.push(`refused_${summary.failed}`);
  return reasons;
}

/** `workloadAt(scale)` builds the requests for one time scale (the CLI re-reads the trace window). */
export function sweep(
  base: Omit<ExperimentBase, "requests">,
  scales: readonly number[],
  policies: readonly string[],
  tuner: TunerSettings,
  workloadAt: (scale: number) => readonly SimRequest[],
  rule: SaturationRule = DEFAULT_SATURATION_RULE,
): SweepJson {
  const workloads = scales.map((s) => workloadAt(s));
  const total = workloads.reduce((n, w) => n + w.length * policies.length, 0);
  let offset = 0;
  const rows: SweepRow[] = [];
  scales.forEach((scale, si) => {
    const requests = workloads[si]!;
    for (const name of policies) {
      const start = offset;
      const result = runPolicy({ ...base, requests }, name, tuner, {
        ...(base.onProgress ? { onProgress: (done: number) => base.onProgress!(start + done, total, `${name}@${scale}`) } : {}),
      });
      offset += requests.length;
      const s = result.summary;
      const reasons = saturationReasons(s, rule);
      rows.push({
        time_scale: scale,
        policy: name,
        requests: s.requests,
        failed: s.failed,
        input_tokens_per_s: roundOrNull(s.input_tokens_per_s, 0),
        ttft_ms: roundPercentiles(s.ttft_ms),
        e2e_ms: roundPercentiles(s.e2e_ms),
        itl_ms_p50: roundOrNull(s.itl_ms_p50, 2),
        cache_hit_rate: roundOrNull(s.cache_hit_rate, 4),
        max_share: roundOrNull(s.max_share, 4) ?? 0,
        drain_ms: roundOrNull(s.drain_ms, 0),
        saturated: reasons.length > 0,
        saturated_because: reasons,
      });
    }
  });
  return { preset: base.spec.name, seed: base.seed, saturation_rule: rule, rows };
}

function roundPercentiles(p: { p50: number; p95: number; p99: number }) {
  return { p50: roundOrNull(p.p50, 1), p95: roundOrNull(p.p95, 1), p99: roundOrNull(p.p99, 1) };
}
