// The pool split, measured beside the session split that trials use (packages/tuner/README.md, "What a
// trial can see"). A trial's traffic can be split three ways: by session (what trials do), by time
// slot, or the replicas of each region in two pools, each arm routing its sessions to its own pool. Pools
// share no replica, so one arm cannot ride on the other's queues; the price is two half fleets, each
// with its own bursts and no help from the other half. bench:tuner's fleets have one replica per
// region, where no pool split exists, so this runs the global preset with 2 and 4 replicas per region
// (each region's replicas in id order, alternately in the incumbent's pool and the candidate's) on the
// short-prompt regime's held-out half and the regime shift's post-shift part, each at its own
// busy-but-clears load. Weight sets: the defaults and seven points of meridian-sim's 9 × 9 grid, from
// spreading to load-blind; every pair of them is one trial to rank.
//
// Run: npx tsx scripts/bench/tuner-pools.ts [--trace PATH] [--replicas 2,4]   (about 3 minutes)
// Prints one JSON object. Per fleet and workload: each set's p95 TTFT deployed alone on every LB, in
// its pool (the arm's sessions on half the replicas) and its fleet p95 under an A/A pool split; per
// pair, the arms' p95 under the pool split and under an even session split; and how many of the pairs
// whose deployed p95s differ by over 10 % each split ranks as deploying each set alone does. Every p95
// pools the 4 evaluation seeds (a refusal is slower than any answer).

import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_WEIGHTS, WEIGHT_BOUNDS, type Weights } from "@meridian/routing";
import {
  busyButClears,
  globalFleet,
  logSpaced,
  simulateFleet,
  summarize,
  type FleetSpec,
  type RefusedRecord,
  type RequestRecord,
  type SimRequest,
} from "@meridian/sim";
import { armOf, type Arm } from "@meridian/tuner";
import { loadTrace } from "@meridian/workload";
import { flag } from "./flags";
import { splitAt } from "./tuner-interference";
import { traceParts } from "./tuner-parts";
import { EVAL_SEEDS, everyLbOn, frozenFleet, frozenP95, regime, requestsOf, round, shiftWorkload, type Regime } from "./tuner-regimes";

const started = performance.now();
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const tracePath = flag("trace") ?? resolve(repoRoot, "../shared/traces/mooncake-conversation.jsonl");
if (!existsSync(tracePath)) {
  process.stdout.write(`${JSON.stringify({ bench: "tuner-pools", error: `trace ${tracePath} not found` })}\n`);
  process.exit(1);
}
const REPLICAS = (flag("replicas") ?? "2,4").split(",").map(Number);
if (REPLICAS.some((n) => !Number.isInteger(n) || n < 2 || n % 2 !== 0)) {
  process.stderr.write("--replicas takes even counts of replicas per region, at least 2 (two pools of equal size)\n");
  process.exit(2);
}
/** A difference of deployed p95s a trial should find: pairs closer than this are ties, not counted. */
const MATTERS = 1.1;

/** The global preset with `n` replicas per region, `<region>-<i>`. */
function fleetOf(n: number): FleetSpec {
  const base = globalFleet();
  return {
    ...base,
    name: `global, ${n} replicas per region`,
    replicas: base.regions.flatMap((region) => Array.from({ length: n }, (_, i) => ({ id: `${region}-${i}`, region }))),
  };
}

/** The arm's pool: every other replica of each region, in id order (the incumbent's starts with the first). */
function poolOf(spec: FleetSpec, arm: Arm): FleetSpec {
  const replicas = spec.regions.flatMap((region) => spec.replicas.filter((r) => r.region === region).filter((_, i) => i % 2 === (arm === "incumbent" ? 0 : 1)));
  return { ...spec, replicas };
}

/** The arm's sessions (armOf at an even share, a salt per seed as a live trial draws one), numbered afresh. */
function sessionsOf(requests: readonly SimRequest[], arm: Arm, seed: number): SimRequest[] {
  const mine = requests.filter((r) => armOf(r.sessionKey, `pools-${seed}`, 0.5) === arm);
  const ids = new Map(mine.map((r, id) => [r.id, id]));
  return mine.map((r, id) => {
    const { afterId, ...rest } = r;
    const after = afterId === undefined ? undefined : ids.get(afterId);
    return { ...rest, id, ...(after !== undefined ? { afterId: after } : {}) };
  });
}

/** `weights` on every LB of the arm's pool, serving the arm's sessions, under each eval seed: what was served and refused. */
function inPool(spec: FleetSpec, requests: readonly SimRequest[], arm: Arm, weights: Weights) {
  const pool = frozenFleet(poolOf(spec, arm), everyLbOn(spec, weights));
  const served: RequestRecord[] = [];
  const refused: RefusedRecord[] = [];
  for (const seed of EVAL_SEEDS) {
    const run = simulateFleet(pool, sessionsOf(requests, arm, seed), { policy: "gorgo", seed, recordRequests: true });
    served.push(...(run.records ?? []));
    refused.push(...(run.refused ?? []));
  }
  return { served, refused };
}

/** The p95 TTFT of runs taken together, a refusal slower than any answer (the simulator's own summary). */
const offeredP95 = (runs: readonly ReturnType<typeof inPool>[]) =>
  round(
    summarize(
      "pools",
      runs.flatMap((r) => r.served),
      [],
      runs.flatMap((r) => r.refused),
    ).ttft_p95_offered_ms,
    1,
  );

const axisRtt = logSpaced(...WEIGHT_BOUNDS.rtt, 9);
const axisQueue = logSpaced(...WEIGHT_BOUNDS.queue, 9);
const SETS: Weights[] = [
  { ...DEFAULT_WEIGHTS },
  ...[3, 4, 5, 6, 7].map((i) => ({ rtt: axisRtt[i]!, queue: axisQueue[0]! })),
  { rtt: axisRtt[4]!, queue: axisQueue[4]! },
  { rtt: axisRtt[2]!, queue: axisQueue[6]! },
];
const label = (w: Weights) => `(${round(w.rtt, 3)}, ${round(w.queue, 3)})`;

function measure(spec: FleetSpec, requests: SimRequest[]) {
  const alone = SETS.map((w) => round(frozenP95(spec, requests, everyLbOn(spec, w)), 1));
  const pools = SETS.map((w) => ({ incumbent: inPool(spec, requests, "incumbent", w), candidate: inPool(spec, requests, "candidate", w) }));
  const pairs = [];
  const agree = { pools: 0, sessions: 0, of: 0 };
  for (let i = 0; i < SETS.length; i++) {
    for (let j = i + 1; j < SETS.length; j++) {
      const pool = { incumbent: offeredP95([pools[i]!.incumbent]), candidate: offeredP95([pools[j]!.candidate]) };
      const split = splitAt(spec, requests, { incumbent: SETS[i]!, candidate: SETS[j]! }, 0.5, EVAL_SEEDS);
      const session = { incumbent: split.incumbent_arm_p95_ms, candidate: split.candidate_arm_p95_ms };
      const candidateBetter = alone[j]! < alone[i]!;
      const matters = Math.max(alone[i]!, alone[j]!) > MATTERS * Math.min(alone[i]!, alone[j]!);
      const poolRight = pool.candidate < pool.incumbent === candidateBetter;
      const sessionRight = session.candidate !== null && session.incumbent !== null && session.candidate < session.incumbent === candidateBetter;
      if (matters) {
        agree.of += 1;
        agree.pools += poolRight ? 1 : 0;
        agree.sessions += sessionRight ? 1 : 0;
      }
      pairs.push({
        incumbent: label(SETS[i]!),
        candidate: label(SETS[j]!),
        deployed_alone_p95_ms: { incumbent: alone[i], candidate: alone[j] },
        pool_split_p95_ms: pool,
        session_split_p95_ms: session,
        matters,
        pool_right: poolRight,
        session_right: sessionRight,
      });
    }
  }
  return {
    requests: requests.length,
    sets: SETS.map((w, k) => ({
      weights: label(w),
      deployed_alone_p95_ms: alone[k],
      in_pool_p95_ms: { incumbent: offeredP95([pools[k]!.incumbent]), candidate: offeredP95([pools[k]!.candidate]) },
      aa_pool_split_fleet_p95_ms: offeredP95([pools[k]!.incumbent, pools[k]!.candidate]),
    })),
    ranked_as_deployed: { pairs_that_matter: agree.of, pool_split: agree.pools, session_split: agree.sessions },
    pairs,
  };
}

const loaded = await loadTrace(tracePath);
const { rows, halves } = traceParts(loaded);
const fleets = REPLICAS.map((n) => {
  const spec = fleetOf(n);
  const r: Regime = { ...regime("short"), spec };
  const heldOut = busyButClears(spec, (s) => requestsOf(r, halves.second, s), { seeds: EVAL_SEEDS }).timeScale;
  const whole = busyButClears(spec, (s) => requestsOf(r, rows, s), { seeds: EVAL_SEEDS }).timeScale;
  return {
    replicas_per_region: n,
    short_prompt_held_out_half: { time_scale: round(heldOut, 5), ...measure(spec, requestsOf(r, halves.second, heldOut)) },
    regime_shift_post_shift: { time_scale: round(whole, 5), ...measure(spec, shiftWorkload(r, rows, whole).post) },
  };
});
process.stdout.write(
  `${JSON.stringify({
    bench: "tuner-pools",
    trace: tracePath,
    eval_seeds: EVAL_SEEDS,
    matters: `deployed p95s more than ${MATTERS}× apart`,
    fleets,
    seconds: round((performance.now() - started) / 1000, 1),
  })}\n`,
);
