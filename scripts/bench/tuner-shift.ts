// Regime-shift diagnosis: why one run of bench:tuner's regime shift ended worse than the defaults. For
// one seed and scope it re-runs the bench's tuning (the same workload, load and freeze) and shows
//   - every trial each tuner decided after the shift: the candidate, the decision and each arm's p95
//     and sample counts (a split trial measures the arms side by side, sharing replicas);
//   - what the frozen weights then do, per client region, against the same fleet with every LB on the
//     post-shift grid optimum (found as bench:tuner finds it, or `--optimum rtt,queue` to skip that),
//     pooled over the evaluation seeds.
// The gap between the two is the open problem of packages/tuner/README.md ("Open").
//
// Run:    npx tsx scripts/bench/tuner-shift.ts [--seed N] [--scope lb|fleet] [--optimum RTT,QUEUE]
//         [--trace PATH]   (about 50 s, 15 s with --optimum; it finds the busy-but-clears load as
//         bench:tuner does)
// Prints: one JSON object: time_scale, trials_after_shift per tuner, frozen weights, and per client
//         region p95 TTFT and local share for the frozen weights and for the optimum.

import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Weights } from "@meridian/routing";
import { percentile, simulateFleet, type FleetSpec, type SimRequest } from "@meridian/sim";
import { loadTrace } from "@meridian/workload";
import { busyScale, EVAL_SEEDS, everyLbOn, frozenFleet, gridOptimum, regime, round, SAMPLES_BUDGET, servedAway, shiftWorkload, tuneOn } from "./tuner-regimes";
import { flag, numberFlag, SEED_RULE } from "./flags";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const tracePath = flag("trace") ?? resolve(repoRoot, "../shared/traces/mooncake-conversation.jsonl");
if (!existsSync(tracePath)) {
  process.stdout.write(`${JSON.stringify({ bench: "tuner-shift", error: `trace ${tracePath} not found: the regime needs the whole conversation trace` })}\n`);
  process.exit(1);
}
const seed = numberFlag("seed", 4, SEED_RULE);
const scope = flag("scope") === "fleet" ? "fleet" : "lb";

const given = flag("optimum")?.split(",").map(Number);
if (given && !(given.length === 2 && given.every((x) => Number.isFinite(x) && x > 0))) {
  process.stdout.write(
    `${JSON.stringify({ bench: "tuner-shift", error: `--optimum wants two positive numbers, W_rtt,W_queue; received ${flag("optimum")}` })}\n`,
  );
  process.exit(1);
}

const rows = await loadTrace(tracePath);
const r = regime("short");
const timeScale = busyScale(r, rows).timeScale;
const { all, atMs, post } = shiftWorkload(r, rows, timeScale);
const tuned = tuneOn(r.spec, all, seed, { scope, stopAfter: { samples: SAMPLES_BUDGET, afterMs: atMs } });
const optimum: Weights = given ? { rtt: given[0]!, queue: given[1]! } : gridOptimum(r.spec, post).weights;

/** p95 TTFT and the share served in the client's own region, per client region, over EVAL_SEEDS pooled. */
function byClientRegion(frozen: FleetSpec, requests: readonly SimRequest[]) {
  const regions = new Map<string, { ttft: number[]; local: number }>();
  for (const evalSeed of EVAL_SEEDS) {
    for (const record of simulateFleet(frozen, requests, { policy: "gorgo", seed: evalSeed, recordRequests: true }).records ?? []) {
      const region = regions.get(record.client_region) ?? { ttft: [], local: 0 };
      region.ttft.push(record.ttft_ms);
      if (!servedAway(record)) region.local++;
      regions.set(record.client_region, region);
    }
  }
  return Object.fromEntries(
    [...regions].map(([region, { ttft, local }]) => [region, { ttft_p95_ms: round(percentile(ttft, 95), 0), local_share: round(local / ttft.length, 2) }]),
  );
}

const weights = (w: Weights) => ({ rtt: round(w.rtt, 3), queue: round(w.queue, 3) });
process.stdout.write(
  `${JSON.stringify({
    bench: "tuner-shift",
    seed,
    scope,
    time_scale: round(timeScale, 6),
    trials_after_shift: Object.fromEntries(
      tuned.reports.map((report) => [
        report.lb,
        report.trajectory
          .filter((point) => point.atMs >= atMs && point.trial)
          .map((point) => ({
            candidate: weights(point.weights),
            incumbent: weights(point.incumbent),
            decision: point.trial!.decision,
            baseline: point.trial!.baseline ?? false,
            p95_ms: {
              candidate: round(point.trial!.p95TtftMs.candidate ?? Number.NaN, 0),
              incumbent: round(point.trial!.p95TtftMs.incumbent ?? Number.NaN, 0),
            },
            samples: point.trial!.samples,
            triggered: point.trial!.triggered,
          })),
      ]),
    ),
    optimum: weights(optimum),
    frozen_weights: Object.fromEntries(Object.entries(tuned.weights).map(([lb, w]) => [lb, weights(w)])),
    post_shift_by_client_region: {
      frozen: byClientRegion(frozenFleet(r.spec, tuned.weights), post),
      optimum: byClientRegion(frozenFleet(r.spec, everyLbOn(r.spec, optimum)), post),
    },
  })}\n`,
);
