// meridian-sim refuses, as usage errors (exit 2, one line), what would measure nothing or what no
// LB would run: a window whose every request is longer than the fleet's input limit, weights and
// grid bounds above the LBs' weight limit. Grid bounds far apart are log-spaced without overflow.
import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_COST_WEIGHT } from "@meridian/routing";
import { grid, NoOptimumError, PRESETS } from "../src/fleet";
import { runCli, SMALL_WINDOW } from "./cli-helpers";

const oneErrorLine = (stderr: string) => {
  const lines = stderr.trim().split("\n");
  assert.equal(lines.length, 1, stderr);
  return lines[0]!;
};

test("compare and grid over a window whose every request is longer than --max-input-tokens: exit 2, no requests left to simulate", async () => {
  const [compare, gridRun] = await Promise.all([
    runCli(["compare", ...SMALL_WINDOW, "--policies", "gorgo", "--oracle-gap", "off", "--max-input-tokens", "1", "--json", "--quiet"]),
    runCli(["grid", ...SMALL_WINDOW, "--points", "2", "--max-input-tokens", "1", "--json", "--quiet"]),
  ]);
  for (const r of [compare, gridRun]) {
    assert.equal(r.code, 2, `exit ${r.code}: ${r.stdout.slice(0, 200)}`);
    assert.equal(r.stdout, "");
    assert.match(
      oneErrorLine(r.stderr),
      /^meridian-sim: error: no requests left to simulate: all \d+ requests of the window have more than 1 input tokens \(--max-input-tokens\)$/,
    );
  }
});

test("the grid names no optimum when no point has a p95 TTFT", () => {
  const spec = PRESETS.paper!();
  assert.throws(
    () => grid(spec, [], 1, { pointsPerAxis: 2 }),
    (error: unknown) => error instanceof NoOptimumError && /none is the optimum/.test(error.message),
  );
});

test("weights and grid bounds above the LBs' weight limit are usage errors; bounds far apart give a grid, not NaN weights", async () => {
  const over = String(MAX_COST_WEIGHT * 2);
  const [weights, bounds, farApart] = await Promise.all([
    runCli(["compare", ...SMALL_WINDOW, "--policies", "gorgo", "--weights", `rtt=${over}`, "--json", "--quiet"]),
    runCli(["grid", ...SMALL_WINDOW, "--points", "2", "--rtt-bounds", "1e-300,1e300", "--json", "--quiet"]),
    // ln(hi / lo) overflows here (hi / lo > 1.8e308): the weights must still be finite, both ends exact.
    runCli(["grid", ...SMALL_WINDOW, "--points", "3", "--rtt-bounds", `5e-324,${MAX_COST_WEIGHT}`, "--json", "--quiet"]),
  ]);
  assert.equal(weights.code, 2, weights.stderr);
  assert.equal(oneErrorLine(weights.stderr), `meridian-sim: error: --weights: rtt must be at most ${MAX_COST_WEIGHT} (the LBs' limit), got "${over}"`);
  assert.equal(bounds.code, 2, bounds.stderr);
  assert.match(oneErrorLine(bounds.stderr), /^meridian-sim: error: --rtt-bounds: HI must be at most 1000000 \(the LBs' weight limit\)/);
  assert.equal(farApart.code, 0, farApart.stderr);
  const rtts = [...new Set((JSON.parse(farApart.stdout) as { points: { rtt: number }[] }).points.map((p) => p.rtt))];
  assert.equal(rtts.length, 3);
  assert.ok(rtts.every(Number.isFinite), `weights ${rtts.join(", ")}`);
  assert.equal(rtts.at(-1), MAX_COST_WEIGHT);
});
