// meridian-sim tune and sweep as child processes: their --json shapes.
import assert from "node:assert/strict";
import { test } from "node:test";
import { runCli, SMALL_WINDOW } from "./cli-helpers";

test("tune --json and sweep --json", async () => {
  const [tune, sweep] = await Promise.all([
    runCli(["tune", ...SMALL_WINDOW, "--window", "16", "--json", "--quiet"]),
    runCli(["sweep", ...SMALL_WINDOW, "--time-scales", "0.25,4", "--policies", "least-request", "--json", "--quiet"]),
  ]);

  assert.equal(tune.code, 0, tune.stderr);
  const tuned = JSON.parse(tune.stdout) as Record<string, unknown>;
  for (const field of ["weights", "samples_to_best", "steps", "converged", "trajectory"]) assert.ok(field in tuned, `missing ${field}`);
  const weights = tuned.weights as { rtt: number; queue: number };
  assert.equal(typeof weights.rtt, "number");
  assert.equal(typeof weights.queue, "number");
  assert.ok(Array.isArray(tuned.trajectory) && (tuned.trajectory as unknown[]).length > 0);

  assert.equal(sweep.code, 0, sweep.stderr);
  const swept = JSON.parse(sweep.stdout) as { rows: { time_scale: number; saturated: boolean; e2e_ms: { p95: number } }[] };
  assert.equal(swept.rows.length, 2);
  const [heavy, light] = swept.rows;
  assert.equal(heavy!.time_scale, 0.25);
  assert.ok(heavy!.e2e_ms.p95 > light!.e2e_ms.p95, "4× the load should be slower");
  assert.equal(heavy!.saturated, true);
});
