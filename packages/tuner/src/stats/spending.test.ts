import { test } from "node:test";
import assert from "node:assert/strict";
import { nextNormal, seedPrng } from "../prng";
import { normalCdf } from "./normal";
import { alphaForLook, alphaSpent } from "./spending";

test("the per-look levels sum to α at the cap, for any ρ", () => {
  for (const rho of [0.5, 1, 2, 3]) {
    let total = 0;
    for (let k = 1; k <= 10; k++) total += alphaForLook(0.05, alphaSpent(0.05, (k - 1) / 10, rho), k / 10, rho);
    assert.ok(Math.abs(total - 0.05) < 1e-12, `ρ = ${rho}: ${total}`);
  }
  assert.equal(alphaSpent(0.05, 2, 1), 0.05, "beyond the cap nothing more is spent");
});

test("ten looks at a null effect: testing each at α inflates false accepts, spending keeps them at or below α", () => {
  // A random walk of standardized increments is the z-statistic of a trial looked at every 10 %.
  const rng = seedPrng(17);
  const reps = 4000;
  let naive = 0;
  let spent = 0;
  for (let r = 0; r < reps; r++) {
    let sum = 0;
    let naiveHit = false;
    let spentHit = false;
    for (let k = 1; k <= 10; k++) {
      sum += nextNormal(rng);
      const p = 1 - normalCdf(sum / Math.sqrt(k));
      if (p <= 0.05) naiveHit = true;
      if (p <= alphaForLook(0.05, alphaSpent(0.05, (k - 1) / 10, 1), k / 10, 1)) spentHit = true;
    }
    if (naiveHit) naive++;
    if (spentHit) spent++;
  }
  assert.ok(naive / reps > 0.12, `naive repeated looks: ${naive / reps}`);
  assert.ok(spent / reps <= 0.05, `alpha spending: ${spent / reps}`);
});
