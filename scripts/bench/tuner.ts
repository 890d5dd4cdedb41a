// Tuner benchmark: every acceptance figure of the online tuner (packages/tuner/README.md), measured in
// the simulator on held-out data, with the seeds and windows each used.
//
// Run:    npm run bench:tuner [-- --trace PATH] [--seeds N] [--aa-seeds N] [--swap-halves]
// Trace:  ../shared/traces/mooncake-conversation.jsonl beside the repository (the bundled 500-row
//         fixture is too short for these regimes: without the trace the script says so and stops).
//         --swap-halves runs the trace's second half first, so the tuning and held-out halves trade
//         places: a check on data the method was not developed on, with the one trace we have.
// Prints: one JSON object:
//   - regimes: how the short- and long-prompt regimes were built, the busy-but-clears rule and the
//     load it found for each workload (each half, quarter and the whole trace at its own load;
//     limited_by "unloaded": none above the unloaded reference cleared, and unloaded_refused: the
//     requests refused even unloaded, a prompt over the LB's limit, which no load is judged on);
//   - aa: A/A trials (candidate = incumbent) over quarters of the trace × seeds, both regimes: the
//     false-accept rate of the method as deployed (triggered analysis) and of its statistic alone;
//   - short_prompt: tune from the defaults on the first half (frozen after 1,000 samples, and at the
//     end of the half), evaluate on the second: p95 TTFT against the grid optimum of the second half
//     and against session-affinity, per seed, for one tuner per LB and one tuner for the fleet; a run
//     worse than the defaults is judged on its tuning half too (tuning_half_p95_ms), and the tuning
//     half has a grid optimum of its own (tuning_half_grid_optimum: what a tuner could gain there);
//   - long_prompt: the same protocol, frozen tuned weights against the defaults on the second half;
//   - regime_shift: the short-prompt regime over the whole trace, the client mix moving halfway;
//     frozen 1,000 samples after the shift, against the grid optimum of the post-shift workload and
//     the defaults; nearby_loads repeats it at loads 0.1–3 % lighter, against the defaults there;
//   - interference: the defaults against each grid optimum above (and the short-prompt optimum against
//     the new one after the shift) split by session at candidate shares 0.1, 0.5 and 0.9, and by time
//     slots of 50–1,000 requests: each arm's p95 beside each set's p95 deployed alone, and whether the
//     split ranks them alike; each arm's share of requests sent to another region (sent_away), beside
//     each set's deployed alone (windows' whole_workload_sent_away);
//     when a fleet tuner's short-prompt run did harm, its weights against the defaults are a fourth
//     pair, on the held-out half and on the half it was tuned on;
//   - windows: the same pairs, each set alone, compared window by window (500–2,000 requests): how
//     often a window of a trial's length ranks them as the whole workload does (a window longer
//     than the workload: windows 0 and a note, no ratios);
//   - every grid optimum also carries fresh_seeds: its p95 and the defaults' under seeds it was not
//     chosen on (the winner's curse of a best-of-81), and every short-prompt and regime-shift run is
//     judged under those seeds too (fresh_seeds_p95_ms, and the counts *_fresh_seeds): on seeds where
//     neither the optimum nor any run was chosen, the comparison favours neither; every tuner's
//     summary says how many of the samples it saw went into the trials it decided, and each step it
//     took with the arms' p95 TTFT as its trial read them (steps_taken);
//   - a run frozen after 1,000 samples says per tuner whether the budget froze it (budget_reached: a
//     trace too short for it leaves the tuner tuning on all it sees); the counts "after 1,000" cover
//     the runs whose every tuner was frozen, and budget_not_reached* counts the others apart;
//   - halves and quarters are cut by the rows' earliest and latest timestamps, in any file order;
//   - timings_s: wall time per part (2 cores shared with other work: see loadavg).

import { existsSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { simulateFleet, type SimRequest, type TunerReport, type TunerScope } from "@meridian/sim";
import { DEFAULT_WEIGHTS, type Weights } from "@meridian/routing";
import { loadTrace } from "@meridian/workload";
import {
  busyScale,
  EVAL_SEEDS,
  FRESH_SEEDS,
  frozenP95,
  gridOptimum,
  onFreshSeeds,
  policyP95,
  regime,
  reportSummary,
  requestsOf,
  round,
  REGIME_SHIFT,
  SAMPLES_BUDGET,
  shiftWorkload,
  tuneOn,
  budgetReached,
  everyTunerFrozen,
  type RegimeName,
} from "./tuner-regimes";
import { swapHalves, traceParts, traceSpan } from "./tuner-parts";
import { interference } from "./tuner-interference";
import { windowsAlone } from "./tuner-windows";
import { flag, numberFlag } from "./flags";

const started = performance.now();
const timings: Record<string, number> = {};
function timed<T>(name: string, fn: () => T): T {
  const t0 = performance.now();
  const value = fn();
  timings[name] = round((performance.now() - t0) / 1000, 1);
  return value;
}

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const tracePath = flag("trace") ?? resolve(repoRoot, "../shared/traces/mooncake-conversation.jsonl");
if (!existsSync(tracePath)) {
  process.stdout.write(`${JSON.stringify({ bench: "tuner", error: `trace ${tracePath} not found: the regimes need the whole conversation trace` })}\n`);
  process.exit(1);
}
const SEEDS = Array.from({ length: numberFlag("seeds", 10, { integer: true, min: 1 }) }, (_, i) => i + 1);
const AA_SEEDS = Array.from({ length: numberFlag("aa-seeds", 10, { integer: true, min: 1 }) }, (_, i) => i + 1);
const SAMPLES = SAMPLES_BUDGET;
const SCOPES: TunerScope[] = ["fleet", "lb"];
/** "No harm" (the long-prompt target): a p95 at most this many times the defaults'. Above it, a run did harm. */
const HARM_TOLERANCE = 1.02;
const worseThanDefaults = (p95: number, defaultsP95: number) => p95 > HARM_TOLERANCE * defaultsP95;
/** The regime shift again at these multiples of its time scale (lighter loads; see nearby_loads). */
const NEARBY_LOADS = [1.001, 1.01, 1.03];

const SWAP_HALVES = process.argv.includes("--swap-halves");
const loaded = await loadTrace(tracePath);
// A swapped trace is cut on the loaded trace's span, where its halves meet (traceParts).
const { rows, halves, quarters } = traceParts(SWAP_HALVES ? swapHalves(loaded) : loaded, traceSpan(loaded));

// ---- regimes: each workload (half, quarter, whole trace) runs at its own busy-but-clears load, found
// with the default weights only (the rule never sees a tuned configuration). One load for all parts
// would not do: with the LB core's hold-when-full, a load the first half clears saturates the second.
const regimes = { short: regime("short"), long: regime("long") };
const busyCache = new Map<string, ReturnType<typeof busyScale>>();
function busy(name: RegimeName, label: string, part: typeof rows) {
  const key = `${name}:${label}`;
  let found = busyCache.get(key);
  if (!found) {
    found = busyScale(regimes[name], part);
    busyCache.set(key, found);
  }
  return found;
}
const loadsJson = () =>
  Object.fromEntries(
    [...busyCache.entries()].map(([key, b]) => [
      key,
      { time_scale: round(b.timeScale, 5), limited_by: b.limitedBy, unloaded_e2e_p95_ms: round(b.unloadedE2eP95Ms, 0), unloaded_refused: b.unloadedRefused },
    ]),
  );

// ---- A/A: the first trial's candidate is the incumbent; one trial per tuner, tuning stops after it
function aa(name: RegimeName, triggeredOnly: boolean) {
  const r = regimes[name];
  let trials = 0;
  let accepts = 0;
  const decisions: Record<string, number> = {};
  for (const [q, quarter] of quarters.entries()) {
    const requests = requestsOf(r, quarter, busy(name, `quarter ${q + 1}`, quarter).timeScale);
    for (const seed of AA_SEEDS) {
      const result = simulateFleet(r.spec, requests, {
        policy: "gorgo",
        seed: 1000 * q + seed,
        tuner: { evaluation: "ab", guardrails: true, aaTrial: true, trial: { triggeredOnly } },
      });
      for (const report of result.tuners) {
        trials++;
        const decision = report.trajectory[0]?.trial?.decision ?? "undecided-at-window-end";
        decisions[decision] = (decisions[decision] ?? 0) + 1;
        if (report.trajectory[0]?.accepted) accepts++;
      }
    }
  }
  return { trials, false_accepts: accepts, false_accept_rate: round(accepts / trials, 4), decisions };
}
function busyRule(): string {
  return [...busyCache.values()][0]?.rule ?? "";
}
const aaJson = timed("aa", () => ({
  windows: "the trace's four quarters",
  seeds: AA_SEEDS,
  runs_per_regime: quarters.length * AA_SEEDS.length,
  method_as_deployed: { short: aa("short", true), long: aa("long", true) },
  statistic_alone: { short: aa("short", false), long: aa("long", false) },
}));

function gridSummary(optimum: ReturnType<typeof gridOptimum>) {
  return { p95_ms: round(optimum.p95, 1), weights: optimum.weights };
}

/**
 * Runs judged under FRESH_SEEDS against the optimum and the defaults judged there too. The optimum is
 * the best of 81 points on EVAL_SEEDS, so on those seeds it is biased low and every run's distance
 * from it is overstated; on seeds that chose nothing, neither side is favoured.
 */
function freshCounts(p95s: readonly number[], fresh: ReturnType<typeof onFreshSeeds>) {
  return {
    within_10pct: `${p95s.filter((p) => p <= 1.1 * fresh.optimum_p95_ms).length}/${p95s.length}`,
    worse_than_defaults: `${p95s.filter((p) => worseThanDefaults(p, fresh.defaults_p95_ms)).length}/${p95s.length}`,
  };
}

// ---- held-out tuning: tune on the first half, freeze, evaluate on the second
function heldOut(name: RegimeName) {
  const r = regimes[name];
  const tune = requestsOf(r, halves.first, busy(name, "first half", halves.first).timeScale);
  const evaluate = requestsOf(r, halves.second, busy(name, "second half", halves.second).timeScale);
  const optimum = name === "short" ? gridOptimum(r.spec, evaluate) : null;
  const fresh = optimum ? onFreshSeeds(r.spec, evaluate, optimum.weights) : null;
  const defaultsP95 = frozenP95(r.spec, evaluate);
  const sessionAffinity = policyP95(r.spec, evaluate, "session-affinity");
  const scopes = Object.fromEntries(
    (name === "short" ? SCOPES : (["lb"] as TunerScope[])).map((scope) => {
      const results = SEEDS.map((seed) => {
        const out: Record<string, unknown> = { seed };
        const budgeted = tuneOn(r.spec, tune, seed, { scope, stopAfter: { samples: SAMPLES } });
        const whole = tuneOn(r.spec, tune, seed, { scope });
        const reached = budgetReached(budgeted.reports);
        for (const [label, tuned, budget] of [
          [`after_${SAMPLES}_samples`, budgeted, reached],
          ["after_first_half", whole, undefined],
        ] as const) {
          const p95 = frozenP95(r.spec, evaluate, tuned.weights);
          const freshP95 = fresh ? frozenP95(r.spec, evaluate, tuned.weights, FRESH_SEEDS) : null;
          // A harmful run, judged again on the half it was tuned on: was the harm there already, or
          // did the weights win that half and lose the next?
          out[label] = {
            held_out_p95_ms: round(p95, 1),
            ...(optimum ? { ratio_to_optimum: round(p95 / optimum.p95, 3), below_session_affinity: p95 < sessionAffinity } : {}),
            ...(freshP95 !== null ? { fresh_seeds_p95_ms: round(freshP95, 1) } : {}),
            ratio_to_defaults: round(p95 / defaultsP95, 3),
            ...(worseThanDefaults(p95, defaultsP95) ? { tuning_half_p95_ms: round(frozenP95(r.spec, tune, tuned.weights), 1) } : {}),
            tuners: reportSummary(tuned.reports, budget),
          };
        }
        return { out, frozen: everyTunerFrozen(reached) };
      });
      const runs = results.map((x) => x.out);
      const pick = (of: readonly Record<string, unknown>[], label: string, key: string) => of.map((run) => (run[label] as Record<string, number>)[key]!);
      const within = (of: readonly Record<string, unknown>[], label: string) =>
        optimum
          ? pick(of, label, "ratio_to_optimum").filter((x) => x <= 1.1).length
          : pick(of, label, "ratio_to_defaults").filter((x) => x <= HARM_TOLERANCE).length;
      // "After N samples" counts only the runs whose every tuner the budget froze; the others tuned on
      // the whole half (a trace too short for the budget) and are counted apart.
      const budgetLabel = `after_${SAMPLES}_samples`;
      const frozen = results.filter((x) => x.frozen).map((x) => x.out);
      const notFrozen = results.filter((x) => !x.frozen).map((x) => x.out);
      const count = (of: readonly Record<string, unknown>[]) => ({
        within_target: `${within(of, budgetLabel)}/${of.length}`,
        ...(fresh ? { fresh_seeds: freshCounts(pick(of, budgetLabel, "fresh_seeds_p95_ms"), fresh) } : {}),
      });
      return [
        scope,
        {
          runs,
          [`within_target_after_${SAMPLES}`]: `${within(frozen, budgetLabel)}/${frozen.length}`,
          within_target_after_first_half: `${within(runs, "after_first_half")}/${runs.length}`,
          ...(fresh
            ? {
                [`after_${SAMPLES}_fresh_seeds`]: freshCounts(pick(frozen, budgetLabel, "fresh_seeds_p95_ms"), fresh),
                after_first_half_fresh_seeds: freshCounts(pick(runs, "after_first_half", "fresh_seeds_p95_ms"), fresh),
              }
            : {}),
          [`budget_not_reached_after_${SAMPLES}`]: { runs: `${notFrozen.length}/${runs.length}`, ...(notFrozen.length > 0 ? count(notFrozen) : {}) },
        },
      ];
    }),
  );
  return {
    tune_on: "first half",
    evaluate_on: "second half",
    target:
      name === "short" ? "held-out p95 within 10 % of the grid optimum, below session-affinity" : `held-out p95 at most ${HARM_TOLERANCE} × the defaults'`,
    grid_optimum: optimum && fresh ? { ...gridSummary(optimum), points: optimum.points, fresh_seeds: fresh } : undefined,
    defaults_p95_ms: round(defaultsP95, 1),
    defaults_tuning_half_p95_ms: round(frozenP95(r.spec, tune), 1),
    // What a tuner could gain on the half it sees: beside grid_optimum, how far the best weights of
    // one half are from the next half's.
    ...(optimum ? { tuning_half_grid_optimum: gridSummary(gridOptimum(r.spec, tune)) } : {}),
    session_affinity_p95_ms: round(sessionAffinity, 1),
    seeds: SEEDS,
    scopes,
  };
}
const shortJson = timed("short_prompt", () => heldOut("short"));
const longJson = timed("long_prompt", () => heldOut("long"));

// ---- regime shift: the whole trace in the short-prompt regime, the client mix moving halfway
/** One tuning run per scope and seed on `all`, frozen SAMPLES after the shift (budgetReached: whether it was), judged on the post-shift part. */
function shiftRuns(all: SimRequest[], atMs: number, post: SimRequest[]) {
  return Object.fromEntries(
    SCOPES.map((scope) => [
      scope,
      SEEDS.map((seed) => {
        const tuned = tuneOn(regimes.short.spec, all, seed, { scope, stopAfter: { samples: SAMPLES, afterMs: atMs } });
        const reached = budgetReached(tuned.reports);
        const p95 = frozenP95(regimes.short.spec, post, tuned.weights);
        return { seed, p95, weights: tuned.weights, reports: tuned.reports, reached, frozen: everyTunerFrozen(reached) };
      }),
    ]),
  ) as Record<
    TunerScope,
    { seed: number; p95: number; weights: Record<string, Weights>; reports: TunerReport[]; reached: Record<string, boolean>; frozen: boolean }[]
  >;
}
const harmful = (runs: readonly { p95: number }[], defaultsP95: number) => runs.filter((run) => worseThanDefaults(run.p95, defaultsP95)).length;
/** Runs the budget froze (every tuner), and the others: a trace too short for the budget; counted apart. */
const byBudget = <T extends { frozen: boolean }>(runs: readonly T[]) => ({ frozen: runs.filter((x) => x.frozen), notFrozen: runs.filter((x) => !x.frozen) });
const shiftJson = timed("regime_shift", () => {
  const r = regimes.short;
  const timeScale = busy("short", "whole trace", rows).timeScale;
  const { all, atMs, post } = shiftWorkload(r, rows, timeScale);
  const optimum = gridOptimum(r.spec, post);
  const fresh = onFreshSeeds(r.spec, post, optimum.weights);
  const scopes = Object.fromEntries(
    Object.entries(shiftRuns(all, atMs, post)).map(([scope, runs]) => {
      const json = runs.map(({ seed, p95, weights, reports, reached, frozen }) => ({
        p95,
        frozen,
        run: {
          seed,
          post_shift_p95_ms: round(p95, 1),
          ratio_to_new_optimum: round(p95 / optimum.p95, 3),
          fresh_seeds_p95_ms: round(frozenP95(r.spec, post, weights, FRESH_SEEDS), 1),
          tuners: reportSummary(reports, reached),
        },
      }));
      const counts = (of: typeof json) => ({
        within_10pct: `${of.filter((x) => x.run.ratio_to_new_optimum <= 1.1).length}/${of.length}`,
        worse_than_defaults: `${harmful(of, optimum.defaults_p95)}/${of.length}`,
        fresh_seeds: freshCounts(
          of.map((x) => x.run.fresh_seeds_p95_ms),
          fresh,
        ),
      });
      const { frozen, notFrozen } = byBudget(json);
      return [
        scope,
        {
          runs: json.map((x) => x.run),
          ...counts(frozen),
          budget_not_reached: { runs: `${notFrozen.length}/${runs.length}`, ...(notFrozen.length > 0 ? counts(notFrozen) : {}) },
        },
      ];
    }),
  );
  // Near the busy-but-clears load a run's outcome turns on small things (which sessions reach which
  // replica before a scrape): the same seeds at loads lighter by 0.1–3 % say how much of a harm count
  // is the method and how much is this one load.
  const nearby = NEARBY_LOADS.map((factor) => {
    const w = shiftWorkload(r, rows, timeScale * factor);
    const defaultsP95 = frozenP95(r.spec, w.post);
    const runs = shiftRuns(w.all, w.atMs, w.post);
    return {
      time_scale_factor: factor,
      defaults_post_shift_p95_ms: round(defaultsP95, 1),
      ...Object.fromEntries(
        SCOPES.map((scope) => {
          const { frozen, notFrozen } = byBudget(runs[scope]);
          return [
            scope,
            {
              post_shift_p95_ms: runs[scope].map((run) => round(run.p95, 0)),
              worse_than_defaults: `${harmful(frozen, defaultsP95)}/${frozen.length}`,
              budget_not_reached: {
                runs: `${notFrozen.length}/${SEEDS.length}`,
                ...(notFrozen.length > 0 ? { worse_than_defaults: `${harmful(notFrozen, defaultsP95)}/${notFrozen.length}` } : {}),
              },
            },
          ];
        }),
      ),
    };
  });
  return {
    shift: `from halfway, client weights ${JSON.stringify(REGIME_SHIFT.clients)} (uniform before)`,
    frozen: `${SAMPLES} samples after the shift (per tuner)`,
    new_grid_optimum: { ...gridSummary(optimum), fresh_seeds: fresh },
    defaults_post_shift_p95_ms: round(optimum.defaults_p95, 1),
    seeds: SEEDS,
    scopes,
    nearby_loads: nearby,
  };
});

// ---- what a trial can see: the pairs the targets are about (the defaults against each grid optimum
// above, and after the shift the short-prompt optimum against the new one). `interference`: the pair
// split by session at several shares, and by time slot, beside each set deployed alone
// (tuner-interference.ts); `windows`: each set alone, compared window by window (tuner-windows.ts).
interface TrialPair {
  workload: string;
  requests: SimRequest[];
  pair: { incumbent: Weights; candidate: Weights };
}
const trialPairs = ((): Record<string, TrialPair> => {
  const r = regimes.short;
  const heldOutHalf = requestsOf(r, halves.second, busy("short", "second half", halves.second).timeScale);
  const { post } = shiftWorkload(r, rows, busy("short", "whole trace", rows).timeScale);
  const shortOptimum = shortJson.grid_optimum!.weights;
  const shiftOptimum = shiftJson.new_grid_optimum.weights;
  const defaults = { ...DEFAULT_WEIGHTS };
  // The fleet tuner's most harmful short-prompt run, when one did harm: does a trial see that harm on
  // the held-out half, and were its weights the better ones on the half it was tuned on?
  const runs = shortJson.scopes.fleet!.runs.map((run) => run.after_first_half as { held_out_p95_ms: number; tuners: ReturnType<typeof reportSummary> });
  const worst = runs.reduce((a, b) => (b.held_out_p95_ms > a.held_out_p95_ms ? b : a));
  const didHarm = worseThanDefaults(worst.held_out_p95_ms, shortJson.defaults_p95_ms);
  const held = "the short-prompt regime's held-out half";
  const afterShift = "the regime shift's post-shift part";
  return {
    short_prompt: { workload: held, requests: heldOutHalf, pair: { incumbent: defaults, candidate: shortOptimum } },
    ...(didHarm
      ? {
          short_prompt_worst_fleet_run: { workload: held, requests: heldOutHalf, pair: { incumbent: defaults, candidate: worst.tuners[0]!.weights } },
          short_prompt_worst_fleet_run_tuning_half: {
            workload: "the short-prompt regime's tuning half",
            requests: requestsOf(r, halves.first, busy("short", "first half", halves.first).timeScale),
            pair: { incumbent: defaults, candidate: worst.tuners[0]!.weights },
          },
        }
      : {}),
    regime_shift: { workload: afterShift, requests: post, pair: { incumbent: defaults, candidate: shiftOptimum } },
    // The way back after the shift: from the weights that were best on short prompts to the new optimum.
    regime_shift_back: { workload: afterShift, requests: post, pair: { incumbent: shortOptimum, candidate: shiftOptimum } },
  };
})();
function perPair<T extends object>(what: string, measure: (p: TrialPair, name: string) => T) {
  return { what, ...Object.fromEntries(Object.entries(trialPairs).map(([name, p]) => [name, { workload: p.workload, ...measure(p, name) }])) };
}
/** Each pair's p95s deployed alone, as `windows` measured them: `interference` compares its splits with these. */
const deployedAlone = new Map<string, ReturnType<typeof windowsAlone>["whole_workload_p95_ms"]>();
const windowsJson = timed("windows", () =>
  perPair(
    "each set alone on every LB over the same requests and seed; per window of N requests (by arrival), whether the set with the lower p95 over the whole workload also has it in the window",
    (p, name) => {
      const measured = windowsAlone(regimes.short.spec, p.requests, p.pair);
      deployedAlone.set(name, measured.whole_workload_p95_ms);
      return measured;
    },
  ),
);
const interferenceJson = timed("interference", () =>
  perPair(
    "each arm's served p95 TTFT (seeds pooled) with the pair split by session at the candidate's share, and by time slot, beside each set deployed alone on every LB (windows' whole_workload_p95_ms)",
    (p, name) => interference(regimes.short.spec, p.requests, p.pair, deployedAlone.get(name)!),
  ),
);

process.stdout.write(
  `${JSON.stringify({
    bench: "tuner",
    trace: tracePath,
    ...(SWAP_HALVES ? { swap_halves: "the trace's second half ran first: tuning and held-out halves traded places" } : {}),
    requests: rows.length,
    samples_budget: SAMPLES,
    eval_seeds: EVAL_SEEDS,
    regimes: {
      short: regimes.short.description,
      long: regimes.long.description,
      busy_but_clears: busyRule(),
      loads: loadsJson(),
    },
    aa: aaJson,
    short_prompt: shortJson,
    long_prompt: longJson,
    regime_shift: shiftJson,
    interference: interferenceJson,
    windows: windowsJson,
    timings_s: { ...timings, total: round((performance.now() - started) / 1000, 1) },
    loadavg: loadavg().map((x) => round(x, 2)),
  })}\n`,
);
