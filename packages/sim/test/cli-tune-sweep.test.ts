// meridian-sim tune and sweep as child processes: their --json shapes.
import assert from "node:assert/strict";
import { test } from "node:test";
import { bundledTracePath, loadTrace } from "@meridian/workload";
import { runCli, SMALL_WINDOW } from "./cli-helpers";

test("tune --json and sweep --json", async () => {
  const [tune, sweep, trials] = await Promise.all([
    runCli(["tune", ...SMALL_WINDOW, "--mode", "paper", "--window", "16", "--hop", "16", "--json", "--quiet"]),
    runCli(["sweep", ...SMALL_WINDOW, "--time-scales", "0.25,4", "--policies", "least-request", "--json", "--quiet"]),
    runCli(["tune", "--trace", "bundled", "--preset", "global", "--tuner-scope", "fleet", "--json", "--quiet"]),
  ]);

  assert.equal(tune.code, 0, tune.stderr);
  const tuned = JSON.parse(tune.stdout) as Record<string, unknown>;
  for (const field of ["weights", "samples_to_best", "steps", "converged", "trajectory"]) assert.ok(field in tuned, `missing ${field}`);
  const weights = tuned.weights as { rtt: number; queue: number };
  assert.equal(typeof weights.rtt, "number");
  assert.equal(typeof weights.queue, "number");
  assert.ok(Array.isArray(tuned.trajectory) && (tuned.trajectory as unknown[]).length > 0);

  // The default: A/B trials. Every step says how its trial ended, on what evidence.
  assert.equal(trials.code, 0, trials.stderr);
  const abRun = JSON.parse(trials.stdout) as {
    evaluation: string;
    lb: string;
    lbs: string[];
    tuners: unknown[];
    trajectory: { kind: string; trial: { decision: string; reason: string; samples: { incumbent: number; candidate: number } } }[];
  };
  assert.equal(abRun.evaluation, "ab");
  assert.equal(abRun.lb, "fleet");
  assert.equal(abRun.lbs.length, 3, "one tuner for the three LBs of the global preset");
  assert.equal(abRun.tuners.length, 1);
  assert.ok(abRun.trajectory.length > 0);
  for (const step of abRun.trajectory) {
    assert.equal(step.kind, "trial");
    assert.match(step.trial.decision, /^(accept|reject)/);
    assert.ok(step.trial.reason.length > 0);
    assert.ok(step.trial.samples.incumbent > 0 && step.trial.samples.candidate > 0);
  }

  assert.equal(sweep.code, 0, sweep.stderr);
  const swept = JSON.parse(sweep.stdout) as { rows: { time_scale: number; saturated: boolean; e2e_ms: { p95: number } }[] };
  assert.equal(swept.rows.length, 2);
  const [heavy, light] = swept.rows;
  assert.equal(heavy!.time_scale, 0.25);
  assert.ok(heavy!.e2e_ms.p95 > light!.e2e_ms.p95, "4× the load should be slower");
  assert.equal(heavy!.saturated, true);
});

test("sweep reports the requests it ran and those dropped as too long, in its line and its JSON", async () => {
  const args = ["sweep", ...SMALL_WINDOW, "--time-scales", "1,2", "--policies", "gorgo", "--max-input-tokens", "8000", "--quiet"];
  const [json, table, rows] = await Promise.all([runCli([...args, "--json"]), runCli(args), loadTrace(bundledTracePath(), { fromMs: 0, toMs: 20_000 })]);
  assert.equal(json.code, 0, json.stderr);
  const swept = JSON.parse(json.stdout) as { dropped_too_long: number; rows: { requests: number }[] };
  const ran = swept.rows[0]!.requests;
  assert.ok(swept.dropped_too_long > 0, "some prompts of the window are over 8,000 tokens");
  assert.equal(ran + swept.dropped_too_long, rows.length);
  assert.ok(swept.rows.every((row) => row.requests === ran));
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, new RegExp(`time_scales \\[1, 2\\], ${ran} requests, ${swept.dropped_too_long} dropped above 8000 input tokens`));
});
