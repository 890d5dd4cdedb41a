import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { normal, createRng } from "./rng";
import { TokenEstimator } from "./token-estimator";

describe("TokenEstimator", () => {
  it("uses 4 chars per token until calibrated", () => {
    const e = new TokenEstimator();
    assert.equal(e.calibrated, false);
    assert.equal(e.estimate(4000), 1000);
    assert.equal(e.estimate(0), 0);
    assert.equal(e.estimate(5), 2, "rounds up");
  });

  it("calibrates from reported prompt tokens and converges to the true ratio", () => {
    const e = new TokenEstimator();
    assert.equal(e.observe(3000, 1000), true);
    assert.equal(e.charsPerToken, 3, "the first sample replaces the default");
    for (let i = 0; i < 200; i++) e.observe(5000, 2000);
    assert.ok(Math.abs(e.charsPerToken - 2.5) < 0.01);
    assert.equal(e.estimate(2500), 1000);
  });

  it("ignores bad or implausible samples and clamps to the sane range", () => {
    const e = new TokenEstimator();
    for (const [chars, tokens] of [
      [Number.NaN, 10],
      [1000, 0],
      [1000, -5],
      [10, 3],
      [100_000, 1],
      [1000, Number.POSITIVE_INFINITY],
    ] as const) {
      assert.equal(e.observe(chars, tokens), false, `${chars}/${tokens}`);
    }
    assert.equal(e.charsPerToken, 4);
    assert.equal(e.sampleCount, 0);
    e.observe(1500, 100); // 15 chars/token: plausible-ish but above the max of 10, clamped
    assert.equal(e.charsPerToken, 10);
  });

  it("rejects a negative or NaN character count and bad options", () => {
    const e = new TokenEstimator();
    assert.throws(() => e.estimate(-1), /chars/);
    assert.throws(() => e.estimate(Number.NaN), /chars/);
    assert.throws(() => new TokenEstimator({ minCharsPerToken: 8, maxCharsPerToken: 2 }), /minCharsPerToken/);
    assert.throws(() => new TokenEstimator({ alpha: 0 }), /alpha/);
  });
});

describe("createRng / normal", () => {
  it("is deterministic per seed, different across seeds, uniform in [0, 1)", () => {
    const a = createRng(42);
    const b = createRng(42);
    const c = createRng(43);
    const xs = Array.from({ length: 1000 }, () => a.next());
    assert.deepEqual(
      xs,
      Array.from({ length: 1000 }, () => b.next()),
    );
    assert.notDeepEqual(
      xs.slice(0, 10),
      Array.from({ length: 10 }, () => c.next()),
    );
    assert.ok(xs.every((x) => x >= 0 && x < 1));
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    assert.ok(Math.abs(mean - 0.5) < 0.05);
    assert.throws(() => createRng(Number.NaN), /seed/);
  });

  it("normal() has mean ≈ 0 and variance ≈ 1", () => {
    const rng = createRng(7);
    const zs = Array.from({ length: 20_000 }, () => normal(rng));
    const mean = zs.reduce((s, z) => s + z, 0) / zs.length;
    const variance = zs.reduce((s, z) => s + (z - mean) ** 2, 0) / zs.length;
    assert.ok(Math.abs(mean) < 0.03, `mean ${mean}`);
    assert.ok(Math.abs(variance - 1) < 0.05, `variance ${variance}`);
  });
});
