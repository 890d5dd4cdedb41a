// Workloads and evaluations behind `npm run bench:tuner` (scripts/bench/tuner.ts): the trace's halves
// and quarters, the short- and long-prompt regimes at their busy-but-clears load, frozen-weight
// evaluations and the grid optimum. Every regime is built by a rule that applies to any trace in the
// Mooncake format (packages/sim/README.md, "Regimes"), not by constants chosen for this one.

import { DEFAULT_WEIGHTS, type Weights } from "@meridian/routing";
import {
  buildSimRequests,
  busyButClears,
  globalFleet,
  grid,
  paperFleet,
  scalePrompts,
  shiftClientMix,
  simulateFleet,
  simulateFleetOverSeeds,
  type FleetSpec,
  type RequestRecord,
  type SimRequest,
  type TunerReport,
  type TunerRunOptions,
} from "@meridian/sim";
import type { TraceRequest } from "@meridian/workload";

export type RegimeName = "short" | "long";

/** Short prompts: every prompt 1/20 as long (at least one block), clients in all three regions. */
export const SHORT_PROMPT_FACTOR = 0.05;

export interface Regime {
  name: RegimeName;
  spec: FleetSpec;
  promptFactor: number;
  description: string;
}

export function regime(name: RegimeName): Regime {
  return name === "short"
    ? {
        name,
        spec: globalFleet(),
        promptFactor: SHORT_PROMPT_FACTOR,
        description: "the trace (`trace`), every prompt 1/20 as long (at least one block), preset global",
      }
    : { name, spec: paperFleet(), promptFactor: 1, description: "the trace (`trace`) as recorded, preset paper" };
}

/** Rows of [fromMs, toMs) in source time. */
export function windowRows(rows: readonly TraceRequest[], fromMs: number, toMs: number): TraceRequest[] {
  return rows.filter((r) => r.sourceTimestampMs >= fromMs && r.sourceTimestampMs < toMs);
}

/**
 * The regime's requests for `rows` at `timeScale`, re-based to the window's earliest row (not its
 * first in file order: rows out of order would arrive at negative times).
 */
export function requestsOf(
  r: Regime,
  rows: readonly TraceRequest[],
  timeScale: number,
  shift?: { atFraction: number; clients: Record<string, number> },
): SimRequest[] {
  if (rows.length === 0) return [];
  const first = rows.reduce((min, row) => Math.min(min, row.sourceTimestampMs), Infinity);
  const built = buildSimRequests(
    rows.map((row) => ({ ...row, timestampMs: (row.sourceTimestampMs - first) * timeScale })),
    r.spec,
  ).requests;
  let requests = r.promptFactor === 1 ? built : scalePrompts(built, r.promptFactor);
  if (shift) requests = shiftClientMix(requests, shiftAtMs(requests, shift.atFraction), shift.clients);
  return requests;
}

export function shiftAtMs(requests: readonly SimRequest[], atFraction: number): number {
  const start = requests[0]!.arrivalMs;
  return start + atFraction * (requests[requests.length - 1]!.arrivalMs - start);
}

/** Samples a tuner may take before it is frozen: in the short-prompt regime after the start, in the regime shift after the shift. */
export const SAMPLES_BUDGET = 1_000;

/** The regime shift: from halfway, one region's clients double (us-ashburn 2 : 1 : 1). */
export const REGIME_SHIFT = { atFraction: 0.5, clients: { "us-ashburn": 2, "eu-frankfurt": 1, "ap-seoul": 1 } };

/** The regime shift's workload at `timeScale`: every request, the shift's time, and the requests after it. */
export function shiftWorkload(r: Regime, rows: readonly TraceRequest[], timeScale: number) {
  const all = requestsOf(r, rows, timeScale, REGIME_SHIFT);
  const atMs = shiftAtMs(all, REGIME_SHIFT.atFraction);
  return { all, atMs, post: from(all, atMs) };
}

/** The requests at or after `atMs`, numbered afresh (a workload of their own). */
export function from(requests: readonly SimRequest[], atMs: number): SimRequest[] {
  return requests.filter((r) => r.arrivalMs >= atMs).map((r, id) => ({ ...r, id }));
}

/**
 * The simulator seeds every evaluation runs under. Near the busy-but-clears load one run says more
 * about its seed (the engines' timing jitter, the LBs' tie-breaks) than about the weights: the
 * defaults' p95 on the first half was 922, 824, 5,628 and 2,469 ms under seeds 1–4. So a load must
 * clear under each of them, and a p95 pools the requests of all of them.
 */
export const EVAL_SEEDS: readonly number[] = [1, 2, 3, 4];

/**
 * Seeds no choice was made on. The grid optimum is the best of 81 points judged on EVAL_SEEDS, so its
 * p95 there is biased low (the winner's curse): judged again under these seeds, with the defaults
 * beside it, it says how much of the target is that luck.
 */
export const FRESH_SEEDS: readonly number[] = [5, 6, 7, 8];

/** The busy-but-clears time scale of the regime on `rows` (the tuning data), under every eval seed. */
export function busyScale(r: Regime, rows: readonly TraceRequest[], seeds: readonly number[] = EVAL_SEEDS) {
  return busyButClears(r.spec, (scale) => requestsOf(r, rows, scale), { seeds });
}

/** The fleet with each LB frozen on its own weights (the defaults where none is given). */
export function frozenFleet(spec: FleetSpec, weightsByLb: Readonly<Record<string, Weights>> = {}): FleetSpec {
  return { ...spec, lbs: spec.lbs.map((lb) => ({ ...lb, weights: weightsByLb[lb.id] ?? { ...DEFAULT_WEIGHTS } })) };
}

/** p95 TTFT of gorgo with each LB on its own weights (the defaults where none is given), over `seeds` pooled; a refusal is slower than any answer. */
export function frozenP95(
  spec: FleetSpec,
  requests: readonly SimRequest[],
  weightsByLb: Readonly<Record<string, Weights>> = {},
  seeds: readonly number[] = EVAL_SEEDS,
): number {
  return simulateFleetOverSeeds(frozenFleet(spec, weightsByLb), requests, { policy: "gorgo" }, seeds).ttft_p95_offered_ms;
}

export function policyP95(spec: FleetSpec, requests: readonly SimRequest[], policy: "session-affinity", seeds: readonly number[] = EVAL_SEEDS): number {
  return simulateFleetOverSeeds(spec, requests, { policy }, seeds).ttft_p95_offered_ms;
}

/** Every LB of `spec` on the same weights (the grid's fleets), as frozenFleet and frozenP95 take them. */
export function everyLbOn(spec: FleetSpec, weights: Weights): Record<string, Weights> {
  return Object.fromEntries(spec.lbs.map((lb) => [lb.id, weights]));
}

/** The best point of meridian-sim's 9 × 9 grid over the default bounds (every LB on the same weights), judged over `seeds` pooled. */
export function gridOptimum(spec: FleetSpec, requests: readonly SimRequest[], seeds: readonly number[] = EVAL_SEEDS) {
  const g = grid(spec, requests, seeds[0]!, { pointsPerAxis: 9, seeds });
  return {
    p95: g.optimum.ttft_ms.p95!,
    weights: { rtt: g.optimum.rtt, queue: g.optimum.queue },
    defaults_p95: g.defaults.ttft_ms.p95!,
    points: g.points.length,
  };
}

/** The grid optimum's weights and the defaults judged again under FRESH_SEEDS (the winner's-curse check). */
export function onFreshSeeds(spec: FleetSpec, requests: readonly SimRequest[], optimum: Weights) {
  return {
    seeds: FRESH_SEEDS,
    optimum_p95_ms: round(frozenP95(spec, requests, everyLbOn(spec, optimum), FRESH_SEEDS), 1),
    defaults_p95_ms: round(frozenP95(spec, requests, {}, FRESH_SEEDS), 1),
  };
}

/** Tunes on `requests` from the defaults; returns each LB's frozen weights and the tuner reports. */
export function tuneOn(spec: FleetSpec, requests: readonly SimRequest[], seed: number, tuner: Omit<TunerRunOptions, "evaluation" | "guardrails">) {
  const result = simulateFleet(spec, requests, {
    policy: "gorgo",
    seed,
    weights: { ...DEFAULT_WEIGHTS },
    tuner: { evaluation: "ab", guardrails: true, ...tuner },
  });
  const weights: Record<string, Weights> = {};
  for (const report of result.tuners) for (const lb of report.lbs) weights[lb] = report.finalWeights;
  return { weights, reports: result.tuners, tuningP95: result.summary.ttft_ms.p95 };
}

/**
 * Per tuner of a run with a samples budget (stopAfter), whether the budget froze it (the simulator's
 * frozenAtSamples). On a trace too short for the budget a tuner never freezes: it tunes on all it
 * sees, and "frozen after N samples" would be false.
 */
export function budgetReached(budgeted: readonly TunerReport[]): Record<string, boolean> {
  return Object.fromEntries(budgeted.map((r) => [r.lb, r.frozenAtSamples !== undefined]));
}

/** Whether every tuner of the run was frozen by its budget (budgetReached). */
export function everyTunerFrozen(reached: Readonly<Record<string, boolean>>): boolean {
  return Object.values(reached).every(Boolean);
}

/** Per tuner: its weights, trials and samples; with `budget` (budgetReached), whether the samples budget froze it. */
export function reportSummary(reports: readonly TunerReport[], budget?: Readonly<Record<string, boolean>>) {
  return reports.map((r) => ({
    tuner: r.lb,
    weights: { rtt: round(r.finalWeights.rtt, 4), queue: round(r.finalWeights.queue, 4) },
    trials: r.steps,
    accepted: r.trajectory.filter((t) => t.accepted).length,
    samples_seen: r.samplesSeen,
    ...(budget ? { budget_reached: budget[r.lb]! } : {}),
    // The rest went to the trial still running at the freeze, or arrived between trials: a request
    // admitted under a trial that was decided before it finished belongs to no trial.
    samples_in_decided_trials: r.trajectory.reduce((sum, t) => sum + (t.trial ? t.trial.samples.incumbent + t.trial.samples.candidate : 0), 0),
    samples_to_best: r.samplesToBest,
    // What each trial that moved the incumbent read: the arms' p95 TTFT as the split saw them, to set
    // beside the same weights deployed alone (packages/tuner/README.md, "What a trial can see").
    steps_taken: r.trajectory
      .filter((t) => t.accepted && t.trial)
      .map((t) => ({
        decision: t.trial!.decision,
        weights: { rtt: round(t.weights.rtt, 4), queue: round(t.weights.queue, 4) },
        samples_seen: t.samplesSeen,
        trial_p95_ms: { incumbent: roundOrNull(t.trial!.p95TtftMs.incumbent), candidate: roundOrNull(t.trial!.p95TtftMs.candidate) },
      })),
  }));
}

/** Whether a served request went to a replica outside its client's region. */
export function servedAway(record: RequestRecord): boolean {
  return record.replica_region !== record.client_region;
}

/**
 * The share of served requests sent to a replica outside their client's region. A split's arms
 * share the replicas' queues, and the arm that keeps its requests home leaves the other to go away
 * past them (packages/tuner/README.md, "Tried and not adopted": diversion).
 */
export function sentAwayShare(records: readonly RequestRecord[]): number | null {
  return records.length === 0 ? null : round(records.filter(servedAway).length / records.length, 3);
}

function roundOrNull(value: number | null): number | null {
  return value === null ? null : round(value, 1);
}

export function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
