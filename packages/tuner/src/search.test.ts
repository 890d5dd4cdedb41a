// Where a candidate lands when the search steps past the bounds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { EsTuner } from "./index";
import { landInBounds } from "./search";

const ab = new EsTuner({ seed: 1 }).state().config;
const paper = new EsTuner({ seed: 1, evaluation: "paper" }).state().config;
const ratio = (w: { rtt: number; queue: number }) => w.rtt / w.queue;

test("A/B mode: a step past one weight's bound keeps the ratio it aimed at, scaling both weights back in", () => {
  // The mirror of a losing step from the defaults (0.22, 2.47): W_queue falls below its floor 0.05.
  const landed = landInBounds({ rtt: 1.15, queue: 0.004 }, ab);
  assert.equal(landed.queue, ab.bounds.queue[0]);
  assert.ok(Math.abs(ratio(landed) - 1.15 / 0.004) < 1e-9, JSON.stringify(landed));
  // Past a ceiling: both come down by one factor.
  const high = landInBounds({ rtt: 400, queue: 1 }, ab);
  assert.equal(high.rtt, ab.bounds.rtt[1]);
  assert.ok(Math.abs(ratio(high) - 400) < 1e-9, JSON.stringify(high));
  // Inside the bounds nothing moves.
  assert.deepEqual(landInBounds({ rtt: 3, queue: 0.2 }, ab), { rtt: 3, queue: 0.2 });
});

test("A/B mode: a ratio beyond any point of the box is clipped to the nearest corner", () => {
  // 1,000 / 0.001 = 10^6 > the box's largest ratio 100 / 0.05.
  assert.deepEqual(landInBounds({ rtt: 1000, queue: 0.001 }, ab), { rtt: ab.bounds.rtt[1], queue: ab.bounds.queue[0] });
});

test("paper mode clips each weight on its own, as GORGO publishes it", () => {
  assert.deepEqual(landInBounds({ rtt: 1.15, queue: 0.004 }, paper), { rtt: 1.15, queue: paper.bounds.queue[0] });
});
