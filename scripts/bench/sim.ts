// Fleet simulator benchmark: wall time to simulate a whole trace on the `paper` preset, per policy.
//
// Run:    npx tsx scripts/bench/sim.ts [--trace PATH] [--policies a,b] [--time-scale S]
//         npm run bench:sim -- --table: instead, the peer comparison table (scripts/bench/sim-table.ts).
// Trace:  defaults to ../shared/traces/mooncake-conversation.jsonl (beside the repo); when that is
//         absent it falls back to the bundled 500-row fixture and says so in the output. A --trace
//         path that does not exist stops it: one line on stderr, exit 1.
// Prints: one JSON object: trace, requests, and per policy the wall time (ms), simulated requests
//         per wall second, the requests its LB refused, and the run's TTFT/E2E p95 so a speed-up that
//         changes results is visible.
// Target: ≤ 5 s per policy for the whole Mooncake conversation trace (12,031 requests, 3 replicas).
// Each policy first runs untimed on the first 1,000 requests (JIT warm-up). Wall times include
// whatever else the machine is doing: `loadavg` is printed alongside.
// `index_truth` (sim-index.ts): prediction accuracy of the LBs' prefix index on the conversation
// trace (paper preset at time scales 1, 2, 3 and a global run), gorgo's p95 TTFT against the oracle
// index, and both against the index before it learned. `--no-index-truth` skips it (about 30 s).

import { loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { buildSimRequests, paperFleet, runPolicy, DEFAULT_COMPARE_POLICIES } from "@meridian/sim";
import { loadTrace } from "@meridian/workload";
import { indexTruth } from "./sim-index";
import { flag, numberFlag } from "./flags";
import { benchTrace } from "./trace-path";

const TARGET_MS_PER_POLICY = 5_000;

if (process.argv.includes("--table")) {
  const { runTable } = await import("./sim-table");
  await runTable();
  process.exit(0);
}

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const { path: tracePath, note } = benchTrace(resolve(repoRoot, "../shared/traces/mooncake-conversation.jsonl"));
const policies = (flag("policies") ?? DEFAULT_COMPARE_POLICIES.join(",")).split(",");
const timeScale = numberFlag("time-scale", 1, { exclusiveMin: 0 });
const withIndexTruth = !process.argv.includes("--no-index-truth");

const loadStart = performance.now();
const rows = await loadTrace(tracePath, { timeScale });
const spec = paperFleet();
const { requests } = buildSimRequests(rows, spec);
const loadMs = performance.now() - loadStart;

// Warm-up, untimed: JIT-compile the simulator, engine, index and policy code on the first 1,000
// requests so the first timed policy does not pay for it.
for (const policy of policies) runPolicy({ spec, requests: requests.slice(0, 1_000), seed: 1 }, policy, { evaluation: "ab", guardrails: true });

const results = policies.map((policy) => {
  const start = performance.now();
  const result = runPolicy({ spec, requests, seed: 1 }, policy, { evaluation: "ab", guardrails: true });
  const wallMs = performance.now() - start;
  return {
    policy,
    wall_ms: Math.round(wallMs),
    simulated_requests_per_s: Math.round(requests.length / (wallMs / 1000)),
    within_target: wallMs <= TARGET_MS_PER_POLICY,
    refused: result.summary.failed,
    ttft_p95_ms: Math.round(result.summary.ttft_ms.p95),
    e2e_p95_ms: Math.round(result.summary.e2e_ms.p95),
  };
});

console.log(
  JSON.stringify(
    {
      benchmark: "sim",
      trace: tracePath,
      ...(note ? { note } : {}),
      preset: spec.name,
      time_scale: timeScale,
      requests: requests.length,
      load_ms: Math.round(loadMs),
      loadavg_1m: Math.round(loadavg()[0]! * 100) / 100,
      target_ms_per_policy: TARGET_MS_PER_POLICY,
      policies: results,
      total_wall_ms: results.reduce((s, r) => s + r.wall_ms, 0),
      ...(withIndexTruth ? { index_truth: await indexTruth(tracePath) } : {}),
    },
    null,
    2,
  ),
);
