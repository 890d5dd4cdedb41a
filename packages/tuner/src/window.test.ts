import { test } from "node:test";
import assert from "node:assert/strict";
import { percentile, summarizeWindow } from "./index";

test("summarizeWindow reports p95 TTFT and E2E, shares and error rate", () => {
  const samples = Array.from({ length: 20 }, (_, i) => ({
    configVersion: 1,
    ttftMs: i === 0 ? null : i * 10,
    e2eMs: 1000 + i,
    replicaId: i < 15 ? "a" : i < 19 ? "b" : null,
    ok: i !== 19,
  }));
  const summary = summarizeWindow(samples);
  assert.equal(summary.samples, 20);
  assert.equal(summary.p95TtftMs, 190, "19 TTFTs 10..190 (the null one is skipped): rank ceil(0.95·19) = 19");
  assert.equal(summary.e2eP95Ms, 1018);
  assert.deepEqual(summary.shares, { a: 0.75, b: 0.2 });
  assert.equal(summary.maxShare, 0.75);
  assert.equal(summary.errorRate, 0.05);
});

test("nearest-rank p95 of 1..100 is 95", () => {
  assert.equal(
    percentile(
      Array.from({ length: 100 }, (_, i) => 100 - i),
      0.95,
    ),
    95,
  );
});

test("an empty window has no TTFT and zero rates", () => {
  assert.deepEqual(summarizeWindow([]), { samples: 0, p95TtftMs: null, e2eP95Ms: 0, shares: {}, maxShare: 0, errorRate: 0 });
  assert.equal(percentile([], 0.95), null);
  assert.equal(percentile([7], 0.95), 7);
});
