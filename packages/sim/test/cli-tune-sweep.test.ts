// meridian-sim tune and sweep as child processes: their --json shapes.
import assert from "node:assert/strict";
import { test } from "node:test";
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
