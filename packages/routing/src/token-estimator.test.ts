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
    assert.equal(e.observe(6000, 2000), true);
    assert.ok(e.charsPerToken < 4 && e.charsPerToken > 3.8, `one sample moves the ratio by alpha only: ${e.charsPerToken}`);
    for (let i = 0; i < 200; i++) e.observe(5000, 2000);
    assert.ok(Math.abs(e.charsPerToken - 2.5) < 0.01);
    assert.equal(e.estimate(2500), 1000);
  });

  it("one request whose count the LB got wrong does not break admission of long prompts", () => {
    // An agent request: 8 KB of prompt the LB counted as 2 KB (tool definitions it did not see), so
    // the engine's count reads ~1 char/token. A 40k-token prompt (160k chars at 4) must stay under a
    // 131,072-token limit: with the first sample taken outright it read as 160k tokens.
    const e = new TokenEstimator();
    assert.equal(e.observe(2020, 2000), true);
    assert.ok(e.charsPerToken >= 3.6, `ratio ${e.charsPerToken}`);
    assert.ok(e.estimate(160_000) < 131_072, `estimate ${e.estimate(160_000)}`);
  });

  it("a short prompt, whose template tokens the characters miss, weighs less than a long one", () => {
    const short = new TokenEstimator();
    const long = new TokenEstimator();
    short.observe(200, 80);
    long.observe(8000, 3200);
    assert.ok(4 - short.charsPerToken < (4 - long.charsPerToken) / 10, `short ${short.charsPerToken}, long ${long.charsPerToken}`);
    // Served only long prompts at 2.5, the estimate gets there however many short ones came first.
    for (let i = 0; i < 100; i++) short.observe(200, 80);
    for (let i = 0; i < 200; i++) short.observe(8000, 3200);
    assert.ok(Math.abs(short.charsPerToken - 2.5) < 0.01);
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
    // 15 chars/token: plausible-ish but above the max of 10, clamped.
    for (let i = 0; i < 300; i++) e.observe(15_000, 1000);
    assert.ok(Math.abs(e.charsPerToken - 10) < 1e-9);
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
