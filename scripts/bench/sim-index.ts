// The index-truth figures of `npm run bench:sim` (scripts/bench/sim.ts calls indexTruth()): how well
// the LBs' prefix index knows what the engines hold, and what that does to routing.
//
// Run:    npm run bench:sim            (the `index_truth` key of its JSON; 72 runs of the trace, 90 held out)
// Prints: nothing itself; returns one JSON-ready object. Per scenario (the conversation trace on the
//         paper preset at time scales 1, 2, 3, and the global preset at time scale 2) and policy:
//           learned   the index the LBs run (`--index learned`): prediction_accuracy, p95 TTFT, cache hit
//           static    the index before it learned (`--index static`, TTL and capacity only)
//           change    learned vs static: relative p95 TTFT change, cache-hit change in points
//           oracle    every LB reading the engines' true caches (`--index oracle`), and the relative
//                     gap of the policy's p95 TTFT to it
//         and whether the targets hold (accuracy >= 0.9 for gorgo and prefix-cache, gorgo within 3 %
//         of the oracle's p95 TTFT).
//         `held_out`: the same figures on workloads the index's rules were never looked at on, from
//         the built-in multi-turn generator (@meridian/workload): `multi-turn-512` has the trace's
//         shape (512-token blocks, one shared system prompt, long growing conversations), once at the
//         request rate of the trace loaded (rows / span, to 2 significant digits; `rate_source` says which rates are
//         fixed) and once lighter; `multi-turn-256` has another shape (256-token blocks,
//         four system prompts, more and shorter sessions). Their targets are reported, not enforced:
//         `all_targets_met` covers the conversation trace only, `held_out.all_targets_met` these.
// Seeds: every figure is the median over seeds 1, 2 and 3 (per-seed p95s are listed). The seed only
// breaks ties and jitters probes, yet a saturated fleet's p95 TTFT moves by up to ±8 % with it, more
// than the 3 % the oracle gap is judged on; a median of three keeps one lucky or unlucky tie-break
// from deciding the verdict.

import { buildSimRequests, globalFleet, paperFleet, runPolicy, type FleetRunResult, type FleetSpec, type IndexMode } from "@meridian/sim";
import { loadTrace, multiTurnTrace, type MultiTurnOptions, type TraceRequest } from "@meridian/workload";

export const INDEX_TRUTH_TARGETS = { prediction_accuracy_min: 0.9, gorgo_ttft_p95_gap_to_oracle_max: 0.03 };
const SCENARIOS: { preset: "paper" | "global"; timeScale: number }[] = [
  { preset: "paper", timeScale: 1 },
  { preset: "paper", timeScale: 2 },
  { preset: "paper", timeScale: 3 },
  { preset: "global", timeScale: 2 },
];
const POLICIES = ["gorgo", "prefix-cache"] as const;
const SEEDS = [1, 2, 3];

const round = (x: number, digits: number): number => Math.round(x * 10 ** digits) / 10 ** digits;

const median = (xs: readonly number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** Median figures over the seeds' runs, with each seed's p95 TTFT. */
function figures(results: readonly FleetRunResult[]) {
  const p95s = results.map((r) => Math.round(r.summary.ttft_ms.p95));
  return {
    prediction_accuracy: round(median(results.map((r) => r.summary.prediction_accuracy)), 4),
    ttft_p95_ms: Math.round(median(p95s)),
    ttft_p95_ms_by_seed: p95s,
    cache_hit_rate: round(median(results.map((r) => r.summary.cache_hit_rate)), 4),
  };
}

/** Every policy with the learned, static and oracle index on one workload; whether its targets hold. */
function scenarioFigures(spec: FleetSpec, rows: readonly TraceRequest[]) {
  const { requests } = buildSimRequests(rows, spec);
  const run = (policy: string, index: IndexMode) =>
    SEEDS.map((seed) => runPolicy({ spec, requests, seed, index }, policy, { evaluation: "ab", guardrails: true }));
  const policies: Record<string, unknown> = {};
  let met = true;
  for (const policy of POLICIES) {
    const learned = figures(run(policy, "learned"));
    const before = figures(run(policy, "static"));
    const row: Record<string, unknown> = {
      learned,
      static: before,
      change: {
        ttft_p95: round((learned.ttft_p95_ms - before.ttft_p95_ms) / before.ttft_p95_ms, 4),
        cache_hit_points: round((learned.cache_hit_rate - before.cache_hit_rate) * 100, 2),
      },
      accuracy_met: learned.prediction_accuracy >= INDEX_TRUTH_TARGETS.prediction_accuracy_min,
    };
    met &&= row.accuracy_met as boolean;
    const oracle = figures(run(policy, "oracle"));
    const gap = round((learned.ttft_p95_ms - oracle.ttft_p95_ms) / oracle.ttft_p95_ms, 4);
    row.oracle = oracle;
    row.ttft_p95_gap_to_oracle = gap;
    if (policy === "gorgo") {
      row.oracle_gap_met = gap <= INDEX_TRUTH_TARGETS.gorgo_ttft_p95_gap_to_oracle_max;
      met &&= row.oracle_gap_met as boolean;
    }
    policies[policy] = row;
  }
  return { requests: requests.length, policies, met };
}

/**
 * The trace's request rate: rows over the span from the earliest to the latest timestamp, to 2
 * significant digits (the precision of the 3.4/s this was a constant of, the conversation trace's
 * 3.40/s; a sparse trace's 0.034/s keeps its rate, where 0.1/s steps rounded it to 0 and the
 * generator refused it); null for a trace with no span (fewer than two timestamps).
 */
export function traceRatePerS(rows: readonly Pick<TraceRequest, "sourceTimestampMs">[]): number | null {
  let first = Infinity;
  let last = -Infinity;
  for (const r of rows) {
    first = Math.min(first, r.sourceTimestampMs);
    last = Math.max(last, r.sourceTimestampMs);
  }
  const rate = rows.length / ((last - first) / 1000);
  return last > first && Number.isFinite(rate) && rate > 0 ? Number(rate.toPrecision(2)) : null;
}

// Held-out generator workloads (30 simulated minutes each). The rates: the request rate of the trace
// (rows / span of the trace loaded), one lighter load, and a load that keeps the other shape's fleet
// busy; no rule of the index was tuned on them.
const MULTI_TURN_BASE = { seed: 7, turns: { min: 4, max: 20 }, durationMs: 1_800_000 } satisfies MultiTurnOptions;
const FIXED_RATE = "fixed in sim-index.ts";
function heldOutWorkloads(traceRate: number | null) {
  const workloads: { workload: string; preset: "paper" | "global"; options: MultiTurnOptions; rateSource: string }[] = [
    ...(["paper", "global"] as const).flatMap((preset) => [
      {
        workload: "multi-turn-512",
        preset,
        options: { ...MULTI_TURN_BASE, ratePerS: 2.5, sessions: 300, blockTokens: 512 as const, userTokens: { min: 200, max: 2000 } },
        rateSource: FIXED_RATE,
      },
      {
        workload: "multi-turn-256",
        preset,
        options: { ...MULTI_TURN_BASE, ratePerS: 4, sessions: 500, systemPrompts: 4, blockTokens: 256 as const, userTokens: { min: 200, max: 1000 } },
        rateSource: FIXED_RATE,
      },
    ]),
  ];
  if (traceRate !== null)
    workloads.push({
      workload: "multi-turn-512",
      preset: "paper",
      options: { ...MULTI_TURN_BASE, ratePerS: traceRate, sessions: 300, blockTokens: 512 as const, userTokens: { min: 200, max: 2000 } },
      rateSource: "the trace's request rate: rows / (latest - earliest timestamp), to 2 significant digits",
    });
  return workloads;
}

const fleetOf = (preset: "paper" | "global"): FleetSpec => (preset === "global" ? globalFleet() : paperFleet());

export async function indexTruth(tracePath: string) {
  const start = performance.now();
  const scenarios = [];
  let allMet = true;
  for (const { preset, timeScale } of SCENARIOS) {
    const { met, ...figs } = scenarioFigures(fleetOf(preset), await loadTrace(tracePath, { timeScale }));
    allMet &&= met;
    scenarios.push({ preset, time_scale: timeScale, ...figs });
  }
  const traceRate = traceRatePerS(await loadTrace(tracePath));
  const heldOut = [];
  let heldOutMet = true;
  for (const { workload, preset, options, rateSource } of heldOutWorkloads(traceRate)) {
    const { met, ...figs } = scenarioFigures(fleetOf(preset), multiTurnTrace(options));
    heldOutMet &&= met;
    heldOut.push({ workload, preset, rate_per_s: options.ratePerS, rate_source: rateSource, ...figs });
  }
  return {
    commands:
      "meridian-sim compare --trace T --preset P --time-scale S --seed N --policies gorgo,prefix-cache --index learned|static|oracle --oracle-gap off --json",
    seeds: SEEDS,
    targets: INDEX_TRUTH_TARGETS,
    all_targets_met: allMet,
    scenarios,
    held_out: {
      generator: { ...MULTI_TURN_BASE, note: "multiTurnTrace() of @meridian/workload; per-workload options in scripts/bench/sim-index.ts" },
      all_targets_met: heldOutMet,
      ...(traceRate === null ? { note: "the trace has no span (one timestamp): no workload at its request rate" } : {}),
      scenarios: heldOut,
    },
    wall_ms: Math.round(performance.now() - start),
  };
}
