import { test } from "node:test";
import assert from "node:assert/strict";
import { nextNormal, nextUniform, seedPrng, type PrngState } from "../prng";
import { randomizationTest, type RandomizationUnit } from "./randomization";

/** Sessions of `turns` samples; each session has its own level (the clustering a conversation brings). */
function sessions(rng: PrngState, count: number, turns: number, share: number, candidateShift: number, sessionSd: number): RandomizationUnit[] {
  const units: RandomizationUnit[] = [];
  for (let i = 0; i < count; i++) {
    const candidate = nextUniform(rng) < share;
    const level = sessionSd * nextNormal(rng);
    let sum = 0;
    for (let k = 0; k < turns; k++) sum += level + nextNormal(rng) - (candidate ? candidateShift : 0);
    units.push({ candidate, sum, count: turns });
  }
  return units;
}

test("under the null the p-value is uniform: P(p ≤ 0.05) ≈ 0.05, even with strongly clustered sessions", () => {
  const rng = seedPrng(3);
  const uniform = () => nextUniform(rng);
  let rejections = 0;
  let naiveRejections = 0;
  const reps = 400;
  for (let r = 0; r < reps; r++) {
    const units = sessions(rng, 60, 5, 0.5, 0, 2);
    if (randomizationTest(units, 0.5, 199, uniform).pBetter <= 0.05) rejections++;
    // The same data re-randomized per request instead of per session ignores the clustering.
    const perRequest: RandomizationUnit[] = units.flatMap((u) =>
      Array.from({ length: u.count }, () => ({ candidate: u.candidate, sum: u.sum / u.count, count: 1 })),
    );
    if (randomizationTest(perRequest, 0.5, 199, uniform).pBetter <= 0.05) naiveRejections++;
  }
  const rate = rejections / reps;
  assert.ok(rate <= 0.075 && rate >= 0.025, `session-level false-positive rate ${rate}`);
  assert.ok(naiveRejections / reps > 0.1, `a request-level test would be anti-conservative here (${naiveRejections / reps})`);
});

test("a real shift is detected, and in the right direction only", () => {
  const rng = seedPrng(5);
  const uniform = () => nextUniform(rng);
  const better = randomizationTest(sessions(rng, 200, 3, 0.5, 0.5, 0.3), 0.5, 999, uniform);
  assert.ok(better.statistic! > 0);
  assert.ok(better.pBetter < 0.01, `pBetter ${better.pBetter}`);
  assert.ok(better.pWorse > 0.9);
  const worse = randomizationTest(sessions(rng, 200, 3, 0.5, -0.5, 0.3), 0.5, 999, uniform);
  assert.ok(worse.pWorse < 0.01 && worse.pBetter > 0.9);
});

test("an arm with no analysed sample gives no statistic and p = 1; p is never below 1/(1+B)", () => {
  const uniform = (() => {
    const rng = seedPrng(1);
    return () => nextUniform(rng);
  })();
  const empty = randomizationTest(
    [
      { candidate: true, sum: 3, count: 3 },
      { candidate: false, sum: 0, count: 0 },
    ],
    0.5,
    99,
    uniform,
  );
  assert.deepEqual(empty, { statistic: null, pBetter: 1, pWorse: 1, permutations: 0 });
  const units = Array.from({ length: 40 }, (_, i) => ({ candidate: i % 2 === 0, sum: i % 2 === 0 ? 0 : 10, count: 1 }));
  assert.equal(randomizationTest(units, 0.5, 99, uniform).pBetter, 1 / 100);
});
