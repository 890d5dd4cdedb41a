// The RTT estimate: an EWMA that a frozen replica's late answer does not poison, and that still learns
// a route that genuinely got slower or faster.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { RTT_EWMA_ALPHA, RTT_OUTLIER_RUN, RttEstimate } from "./rtt";

function estimateOf(samples: readonly number[]): RttEstimate {
  const rtt = new RttEstimate();
  for (const sample of samples) rtt.observe(sample);
  return rtt;
}

test("the first sample seeds the estimate and the next ones are smoothed with α = 0.3", () => {
  const rtt = estimateOf([10, 12]);
  assert.equal(rtt.ms, RTT_EWMA_ALPHA * 12 + (1 - RTT_EWMA_ALPHA) * 10);
  assert.equal(new RttEstimate().ms, null);
});

test("a frozen replica's late probe answer is left out of the estimate", () => {
  const rtt = estimateOf([1, 1.2, 0.9, 1.1]);
  const before = rtt.ms;
  assert.equal(rtt.observe(459), "outlier");
  assert.equal(rtt.ms, before);
  // The replica answers normally again: the estimate never saw the stall.
  assert.equal(rtt.observe(1), "sample");
  assert.ok((rtt.ms ?? 0) < 1.2);
});

test("loopback jitter is a sample, not an outlier", () => {
  const rtt = estimateOf([1, 1, 1]);
  assert.equal(rtt.observe(8), "sample");
  assert.ok((rtt.ms ?? 0) > 1);
});

test("a run of slow samples is a real change: the estimate follows at the run's fastest sample", () => {
  const rtt = estimateOf([2, 2, 2]);
  const slow = [120, 95, 110];
  for (let i = 0; i < RTT_OUTLIER_RUN - 1; i++) assert.equal(rtt.observe(slow[i] as number), "outlier");
  assert.equal(rtt.ms, 2);
  assert.equal(rtt.observe(slow[RTT_OUTLIER_RUN - 1] as number), "reseed");
  assert.equal(rtt.ms, 95);
  // From there it smooths as usual.
  assert.equal(rtt.observe(100), "sample");
});

test("an outlier run broken by a normal sample starts over", () => {
  const rtt = estimateOf([2, 2]);
  rtt.observe(300);
  rtt.observe(2);
  rtt.observe(300);
  assert.equal(rtt.observe(2), "sample");
  assert.ok((rtt.ms ?? 0) < 3);
});

test("an estimate seeded by a slow first answer is re-seeded by the first fast one", () => {
  const rtt = estimateOf([459]);
  assert.equal(rtt.observe(1.5), "reseed");
  assert.equal(rtt.ms, 1.5);
});

test("timeouts never reach the estimate, and nonsense samples are ignored", () => {
  const rtt = estimateOf([5]);
  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, -1]) assert.equal(rtt.observe(bad), "invalid");
  assert.equal(rtt.ms, 5);
});
