import { test } from "node:test";
import assert from "node:assert/strict";
import { armOf, hashUnit } from "./arm";

test("a session's arm is stable: the same key, salt and share always give the same arm", () => {
  for (let i = 0; i < 1000; i++) {
    const key = `session-${i}`;
    assert.equal(armOf(key, "9f3a11c2", 0.5), armOf(key, "9f3a11c2", 0.5));
  }
});

test("over 10k sessions each arm holds its share within ±2 %, for several shares and salts", () => {
  for (const share of [0.1, 0.25, 0.5, 0.8]) {
    for (const salt of ["00000000", "9f3a11c2", "trial-7", "a"]) {
      let candidates = 0;
      for (let i = 0; i < 10_000; i++) if (armOf(`s${i}`, salt, share) === "candidate") candidates++;
      const measured = candidates / 10_000;
      assert.ok(Math.abs(measured - share) <= 0.02, `share ${share}, salt ${salt}: ${measured}`);
    }
  }
});

test("a new salt re-shuffles the sessions: the two trials' arms are independent", () => {
  let both = 0;
  let first = 0;
  for (let i = 0; i < 10_000; i++) {
    const a = armOf(`user/${i}`, "salt-a", 0.5) === "candidate";
    const b = armOf(`user/${i}`, "salt-b", 0.5) === "candidate";
    if (a) first++;
    if (a && b) both++;
  }
  // Independent arms: P(both) ≈ 0.25, i.e. half of the first trial's candidates.
  assert.ok(Math.abs(both / first - 0.5) < 0.03, `overlap ${both / first}`);
});

test("hashUnit is uniform on [0, 1) for sequential keys (no clustering of similar sessions)", () => {
  const buckets = new Array(10).fill(0);
  for (let i = 0; i < 20_000; i++) buckets[Math.floor(hashUnit(`0/${i}`) * 10)]++;
  for (const count of buckets) assert.ok(Math.abs(count - 2000) < 200, `bucket ${count}`);
});
