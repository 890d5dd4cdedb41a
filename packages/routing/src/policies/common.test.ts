import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RoutingInputError } from "../errors";
import { createRng } from "../rng";
import { createPolicy } from "../select";
import { argminRandomTie } from "./common";
import { candidate, context, request } from "./test-support";

describe("argminRandomTie", () => {
  const allowed = (n: number) => new Array<boolean>(n).fill(true);

  it("never lets a NaN or infinite score beat a finite one, wherever it sits", () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      for (let seed = 1; seed <= 20; seed++) {
        assert.equal(argminRandomTie([bad, 5, 3], allowed(3), createRng(seed)), 2, `${bad} first`);
        assert.equal(argminRandomTie([5, bad, 3], allowed(3), createRng(seed)), 2, `${bad} in the middle`);
        assert.equal(argminRandomTie([3, 5, bad], allowed(3), createRng(seed)), 0, `${bad} last`);
      }
    }
  });

  it("picks among non-finite scores only when no allowed score is finite", () => {
    assert.equal(argminRandomTie([Number.NaN, 1, Number.POSITIVE_INFINITY], [true, false, true], createRng(1)) !== 1, true);
    const picks = new Set<number>();
    const rng = createRng(3);
    for (let i = 0; i < 200; i++) picks.add(argminRandomTie([Number.NaN, Number.POSITIVE_INFINITY, 2], [true, true, false], rng));
    assert.deepEqual([...picks].sort(), [0, 1], "both non-finite candidates are picked, never the disallowed one");
  });

  it("throws a RoutingInputError naming the candidates when none is allowed", () => {
    assert.throws(
      () => argminRandomTie([1, Number.NaN], [false, false], createRng(1)),
      (e: unknown) => e instanceof RoutingInputError && e.field === "candidates",
    );
  });
});

describe("gorgo with weights that overflow its scores", () => {
  it("still picks the nearer replica when W_rtt·rtt is Infinity for the far one", () => {
    // 1e307 × 200 ms overflows to Infinity; 1e307 × 1 ms does not. The wire caps weights at 1e6, but a
    // policy must not pick the worse replica if such a weight reaches it some other way.
    const ctx = { ...context(), weights: { rtt: 1e307, queue: 0.1 } };
    for (let seed = 1; seed <= 10; seed++) {
      const d = createPolicy("gorgo").select(request(4), [candidate("far", { rttMs: 200 }), candidate("near", { rttMs: 1 })], {
        ...ctx,
        rng: createRng(seed),
      });
      assert.equal(d.choice, "near");
    }
  });
});
