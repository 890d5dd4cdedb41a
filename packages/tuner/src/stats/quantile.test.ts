import { test } from "node:test";
import assert from "node:assert/strict";
import { nextNormal, seedPrng } from "../prng";
import { normalCdf, normalQuantile } from "./normal";
import { percentile, quantileInterval, samplesToSeeTail } from "./quantile";

test("normal CDF and quantile invert each other and match tabulated values", () => {
  assert.ok(Math.abs(normalQuantile(0.975) - 1.959964) < 1e-5);
  assert.ok(Math.abs(normalQuantile(0.95) - 1.644854) < 1e-5);
  assert.ok(Math.abs(normalQuantile(0.001) + 3.090232) < 1e-5);
  assert.ok(Math.abs(normalCdf(1.959964) - 0.975) < 1e-6);
  for (const p of [0.0001, 0.01, 0.2, 0.5, 0.8, 0.99, 0.9999]) assert.ok(Math.abs(normalCdf(normalQuantile(p)) - p) < 1e-6, `p = ${p}`);
  assert.throws(() => normalQuantile(1), /p must be in \(0, 1\)/);
});

test("nearest-rank p95 of 1..100 is 95, of one sample is that sample, of none is null", () => {
  assert.equal(
    percentile(
      Array.from({ length: 100 }, (_, i) => i + 1),
      0.95,
    ),
    95,
  );
  assert.equal(percentile([7], 0.95), 7);
  assert.equal(percentile([], 0.95), null);
});

test("the order-statistic interval covers a known lognormal p95 about 95 % of the time", () => {
  // Lognormal(μ = 6, σ = 0.8): p95 = exp(6 + 1.6449·0.8). 1,000 intervals from 400 samples each.
  const truth = Math.exp(6 + normalQuantile(0.95) * 0.8);
  const rng = seedPrng(11);
  let covered = 0;
  let unbounded = 0;
  const reps = 1000;
  for (let r = 0; r < reps; r++) {
    const sorted = Array.from({ length: 400 }, () => Math.exp(6 + 0.8 * nextNormal(rng))).sort((a, b) => a - b);
    const { lo, hi } = quantileInterval(sorted, 0.95, 0.95);
    if (hi === null) unbounded++;
    if (lo !== null && lo <= truth && (hi === null || truth <= hi)) covered++;
  }
  assert.equal(unbounded, 0, "400 samples leave room above the p95 rank");
  const coverage = covered / reps;
  assert.ok(coverage >= 0.93 && coverage <= 0.99, `coverage ${coverage}`);
});

test("an interval from too few samples is open-ended rather than falsely narrow", () => {
  const sorted = Array.from({ length: 10 }, (_, i) => i + 1);
  const { hi } = quantileInterval(sorted, 0.95, 0.95);
  assert.equal(hi, null, "nothing above rank 10 can bound the p95 of 10 samples");
  assert.deepEqual(quantileInterval([], 0.95, 0.95), { lo: null, hi: null });
});

test("samplesToSeeTail: the smallest sample that holds a value above the quantile with the stated confidence", () => {
  assert.equal(samplesToSeeTail(0.95, 0.95), 59); // 1 − 0.95^59 = 0.952, 1 − 0.95^58 = 0.949
  assert.equal(samplesToSeeTail(0.5, 0.75), 2);
  assert.ok(1 - 0.95 ** 59 >= 0.95 && 1 - 0.95 ** 58 < 0.95);
  assert.throws(() => samplesToSeeTail(1, 0.95), /p and confidence in \(0, 1\)/);
});
