// meridian-sim grid and the regime flags (--prompt-factor, --time-scale busy, --shift-clients) as child processes.
import assert from "node:assert/strict";
import { test } from "node:test";
import { runCli, SMALL_WINDOW } from "./cli-helpers";

test("grid --json prints one object with every point, the optimum and the defaults' distance; the table names the optimum", async () => {
  const args = [
    "grid",
    ...SMALL_WINDOW,
    "--preset",
    "global",
    "--prompt-factor",
    "0.05",
    "--points",
    "2",
    "--rtt-bounds",
    "0.5,50",
    "--queue-bounds",
    "0.05,5",
  ];
  const [json, table] = await Promise.all([runCli([...args, "--json", "--quiet"]), runCli([...args, "--quiet"])]);
  assert.equal(json.code, 0, json.stderr);
  const lines = json.stdout.trim().split("\n");
  assert.equal(lines.length, 1);
  const grid = JSON.parse(lines[0]!) as {
    points: unknown[];
    optimum: { ttft_ms: { p95: number } };
    defaults: { p95_ratio_to_optimum: number; log_distance_to_optimum: number };
    time_scale: number;
  };
  assert.equal(grid.points.length, 4);
  assert.ok(grid.defaults.p95_ratio_to_optimum >= 1);
  assert.equal(grid.time_scale, 1);
  assert.equal("index" in grid, false, "the default (learned) index is not written");
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /prompts ×0\.05/);
  assert.match(table.stdout, /\* = optimum/);
  assert.match(table.stdout, /defaults: [\d.]+× the optimum's p95 TTFT/);
});

test("grid --index runs the grid on that index and records it in the JSON", async () => {
  const result = await runCli(["grid", ...SMALL_WINDOW, "--points", "2", "--index", "oracle", "--json", "--quiet"]);
  assert.equal(result.code, 0, result.stderr);
  const grid = JSON.parse(result.stdout) as { index: string; points: unknown[] };
  assert.equal(grid.index, "oracle");
  assert.equal(grid.points.length, 4);
});

test("--time-scale busy picks the load by the busy-but-clears rule and reports how", async () => {
  const result = await runCli(["compare", "--trace", "bundled", "--policies", "gorgo", "--time-scale", "busy", "--json", "--quiet"]);
  assert.equal(result.code, 0, result.stderr);
  const json = JSON.parse(result.stdout) as {
    time_scale: number;
    busy_load: { timeScale: number; limitedBy: string; rule: string; probes: { clears: boolean }[] };
  };
  assert.equal(json.time_scale, json.busy_load.timeScale);
  assert.equal(json.busy_load.limitedBy, "load");
  assert.match(json.busy_load.rule, /heaviest time scale/);
  assert.equal(json.busy_load.probes.at(-1)!.clears, false);
});

test("regime flags reject bad input with exit 2 and one line", async () => {
  const cases: [string[], RegExp][] = [
    [["grid", ...SMALL_WINDOW, "--shift-at", "0.5"], /--shift-at needs --shift-clients/],
    [["grid", ...SMALL_WINDOW, "--shift-clients", "mars=1"], /--shift-clients: unknown region "mars"/],
    [["grid", ...SMALL_WINDOW, "--shift-clients", "us-ashburn=0"], /at least one region needs a positive weight/],
    [["grid", ...SMALL_WINDOW, "--prompt-factor", "0"], /--prompt-factor: must be > 0/],
    [["grid", ...SMALL_WINDOW, "--points", "1"], /--points: must be ≥ 2/],
    [["grid", ...SMALL_WINDOW, "--rtt-bounds", "0,2"], /lower bound must be > 0/],
  ];
  const results = await Promise.all(cases.map(([args]) => runCli(args)));
  results.forEach((result, i) => {
    assert.equal(result.code, 2, `${cases[i]![0].join(" ")}: ${result.stderr}`);
    assert.equal(result.stdout, "");
    assert.match(result.stderr, cases[i]![1]);
  });
});

test("grid reports small weights as run (significant digits), never rounded to 0", async () => {
  const r = await runCli(["grid", ...SMALL_WINDOW, "--rtt-bounds", "1e-7,9e-7", "--queue-bounds", "0.1,0.2", "--points", "3", "--json", "--quiet"]);
  assert.equal(r.code, 0, r.stderr);
  const rtts = new Set((JSON.parse(r.stdout) as { points: { rtt: number }[] }).points.map((p) => p.rtt));
  assert.deepEqual([...rtts].sort(), [1e-7, 3e-7, 9e-7].map((w) => Number(w.toPrecision(6))).sort());
});

test("grid with a default weight of 0 (the reward hack) reports no distance rather than 0", async () => {
  const r = await runCli([
    "grid",
    ...SMALL_WINDOW,
    "--rtt-bounds",
    "0.5,1",
    "--queue-bounds",
    "0.1,0.2",
    "--points",
    "2",
    "--weights",
    "rtt=0.5,queue=0",
    "--json",
    "--quiet",
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal((JSON.parse(r.stdout) as { defaults: { log_distance_to_optimum: number | null } }).defaults.log_distance_to_optimum, null);
});
