import assert from "node:assert/strict";
import { test } from "node:test";
import { bundledTracePath, loadTrace } from "@meridian/workload";
import { buildSimRequests, grid, logSpaced, paperFleet, simulateFleet, simulateFleetOverSeeds } from "./index";

test("logSpaced covers both ends evenly in log space", () => {
  const values = logSpaced(0.05, 100, 5);
  assert.equal(values.length, 5);
  assert.ok(Math.abs(values[0]! - 0.05) < 1e-12 && Math.abs(values[4]! - 100) < 1e-9);
  const ratios = values.slice(1).map((v, i) => v / values[i]!);
  for (const r of ratios) assert.ok(Math.abs(r - ratios[0]!) < 1e-9);
  assert.deepEqual(logSpaced(2, 2, 3), [2]);
  assert.throws(() => logSpaced(0, 1, 3), /0 < lo/);
});

test("grid maps every point, picks the lowest p95 TTFT as the optimum and places the defaults against it", async () => {
  const spec = paperFleet();
  const rows = (await loadTrace(bundledTracePath(), { toMs: 30_000 })).map((r) => ({ ...r, timestampMs: r.timestampMs * 3 }));
  const requests = buildSimRequests(rows, spec).requests;
  const json = grid(spec, requests, 1, { pointsPerAxis: 3, bounds: { rtt: [0.05, 5], queue: [0.05, 5] } });
  assert.equal(json.points.length, 9);
  for (const p of json.points) {
    assert.ok(p.ttft_ms.p95! >= p.ttft_ms.p50!);
    assert.ok(p.max_share > 0 && p.max_share <= 1);
    assert.ok(p.e2e_p95_ms! >= p.ttft_ms.p95!);
  }
  const lowest = Math.min(...json.points.map((p) => p.ttft_ms.p95!), json.defaults.ttft_ms.p95!);
  assert.equal(json.optimum.ttft_ms.p95, lowest);
  assert.ok(json.defaults.p95_ratio_to_optimum! >= 1);
  assert.equal(json.defaults.rtt, 0.5);
  const expected = Math.hypot(Math.log(0.5 / json.optimum.rtt), Math.log(0.1 / json.optimum.queue));
  assert.ok(Math.abs(json.defaults.log_distance_to_optimum! - expected) < 1e-3);
});

test("a grid over several seeds judges each point on every seed's requests pooled; one seed is simulateFleet's summary", async () => {
  const spec = paperFleet();
  const rows = (await loadTrace(bundledTracePath(), { toMs: 30_000 })).map((r) => ({ ...r, timestampMs: r.timestampMs * 3 }));
  const requests = buildSimRequests(rows, spec).requests;
  const options = { policy: "gorgo" as const, weights: { rtt: 0.5, queue: 0.1 } };
  assert.deepEqual(simulateFleetOverSeeds(spec, requests, options, [2]), simulateFleet(spec, requests, { ...options, seed: 2 }).summary);
  const pooled = simulateFleetOverSeeds(spec, requests, options, [1, 2]);
  assert.equal(pooled.requests, 2 * requests.length);
  const single = [1, 2].map((seed) => simulateFleet(spec, requests, { ...options, seed }).summary.ttft_ms.p95);
  assert.ok(pooled.ttft_ms.p95 >= Math.min(...single) && pooled.ttft_ms.p95 <= Math.max(...single));
  assert.throws(() => simulateFleetOverSeeds(spec, requests, options, []), /at least one seed/);

  const json = grid(spec, requests, 1, { pointsPerAxis: 2, bounds: { rtt: [0.5, 5], queue: [0.1, 1] }, seeds: [1, 2] });
  assert.deepEqual(json.seeds, [1, 2]);
  assert.equal(json.defaults.ttft_ms.p95, Math.round(pooled.ttft_p95_offered_ms * 10) / 10);
  assert.equal(grid(spec, requests, 1, { pointsPerAxis: 2 }).seeds, undefined);
});

test("grid runs every point on the index it is given and records it; the default (learned) leaves the JSON as it was", async () => {
  const spec = paperFleet();
  // The whole fixture: on its first minute the three indexes happen to route alike.
  const requests = buildSimRequests(await loadTrace(bundledTracePath()), spec).requests;
  const options = { pointsPerAxis: 2, bounds: { rtt: [0.5, 5] as const, queue: [0.1, 1] as const } };
  const learned = grid(spec, requests, 1, options);
  assert.equal("index" in learned, false);
  assert.deepEqual(grid(spec, requests, 1, { ...options, index: "learned" }), learned);
  const weights = { rtt: 0.5, queue: 0.1 };
  for (const index of ["static", "oracle"] as const) {
    const json = grid(spec, requests, 1, { ...options, index });
    assert.equal(json.index, index);
    const direct = simulateFleet(spec, requests, { policy: "gorgo", seed: 1, weights, index }).summary;
    assert.equal(json.defaults.ttft_ms.p95, Math.round(direct.ttft_p95_offered_ms * 10) / 10, `${index}: the defaults ran on the ${index} index`);
    assert.equal(json.defaults.max_share, Math.round(direct.max_share * 10_000) / 10_000);
    assert.notEqual(json.defaults.ttft_ms.p95, learned.defaults.ttft_ms.p95, `${index}: the workload tells it apart from learned`);
  }
});
