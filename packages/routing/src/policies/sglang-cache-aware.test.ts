import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RoutingInputError } from "../errors";
import { createPolicy } from "../select";
import { candidate, context, dispatch, request } from "./test-support";

// SGLang's CLI defaults: cache_threshold 0.3, balance_abs_threshold 64, balance_rel_threshold 1.5.
const prompt = request(100); // 100 blocks × 16 tokens = 1600 tokens

/** A policy whose tree holds `prompt` (all of it) on `warm`. */
function warmOn(warm: string, blocks = 100) {
  const policy = createPolicy("sglang-cache-aware");
  dispatch(policy, "earlier", request(blocks), warm);
  return policy;
}

describe("sglang-cache-aware: load imbalance switches to the shortest queue", () => {
  it("needs max − min > balance_abs_threshold (64): 65 switches, 64 does not", () => {
    const pick = (busy: number) => warmOn("warm").select(prompt, [candidate("idle", { inFlight: 0 }), candidate("warm", { inFlight: busy })], context());
    const switched = pick(65);
    assert.equal(switched.choice, "idle");
    assert.match(switched.reason ?? "", /shortest-queue/);
    assert.equal(pick(64).choice, "warm", "64 − 0 is not > 64: balanced, so the cache decides");
  });

  it("also needs max > min × balance_rel_threshold (1.5): 196 vs 130 switches, 195 vs 130 does not", () => {
    const pick = (busy: number) => warmOn("warm").select(prompt, [candidate("cool", { inFlight: 130 }), candidate("warm", { inFlight: busy })], context());
    assert.equal(pick(196).choice, "cool", "66 > 64 and 196 > 195");
    assert.equal(pick(195).choice, "warm", "65 > 64 but 195 is not > 130 × 1.5");
  });

  it("measures imbalance over healthy workers only", () => {
    const d = warmOn("warm").select(
      prompt,
      [candidate("down", { inFlight: 0, healthy: false }), candidate("warm", { inFlight: 100 }), candidate("other", { inFlight: 90 })],
      context(),
    );
    assert.equal(d.choice, "warm", "without the unhealthy idle worker the pool is balanced");
  });

  it("switches on the KV-usage triggers only when they are set and capacities are known", () => {
    const kv = (used: number) => ({ scraped: { running: 0, waiting: 0, usedTokens: used }, kvCapacityTokens: 1000 });
    // By request count the pool is balanced (1 vs 2); the shortest queue, when triggered, is cool's.
    const cs = [candidate("cool", { ...kv(200), inFlight: 1 }), candidate("warm", { ...kv(900), inFlight: 2 })];
    assert.equal(warmOn("warm").select(prompt, cs, context()).choice, "warm", "both triggers default to 1.0: off");
    const spread = createPolicy("sglang-cache-aware", { sglang: { balanceTokenUsageThreshold: 0.5 } });
    dispatch(spread, "earlier", prompt, "warm");
    assert.equal(spread.select(prompt, cs, context()).choice, "cool", "0.9 − 0.2 > 0.5");
    const ceiling = createPolicy("sglang-cache-aware", { sglang: { overloadTokenUsageThreshold: 0.85 } });
    dispatch(ceiling, "earlier", prompt, "warm");
    assert.equal(ceiling.select(prompt, cs, context()).choice, "cool", "0.9 > 0.85");
    const blind = [
      candidate("cool", { inFlight: 1, scraped: { running: 0, waiting: 0, usedTokens: 200 } }),
      candidate("warm", { inFlight: 2, scraped: { running: 0, waiting: 0, usedTokens: 900 } }),
    ];
    assert.equal(spread.select(prompt, blind, context()).choice, "warm", "no kvCapacityTokens: no utilization, no trigger");
  });
});

describe("sglang-cache-aware: balanced, the cache threshold decides", () => {
  // warm holds the first `blocks` blocks of the prompt and is busier; cold is idle.
  function pick(blocks: number, threshold?: number) {
    const policy = createPolicy("sglang-cache-aware", threshold === undefined ? {} : { sglang: { cacheThreshold: threshold } });
    dispatch(policy, "earlier", request(blocks), "warm");
    return policy.select(prompt, [candidate("cold", { inFlight: 0 }), candidate("warm", { inFlight: 5 })], context());
  }

  it("follows the best match only above cache_threshold: 31/100 blocks goes warm, 30/100 does not", () => {
    assert.equal(pick(31).choice, "warm");
    assert.equal(pick(30).choice, "cold", "0.30 is not > 0.3");
    assert.match(pick(30).reason ?? "", /least-load \(match rate 0\.3 <= cache_threshold\)/);
  });

  it("takes the library's 0.5 when given: 50/100 stays cold, 51/100 goes warm", () => {
    assert.equal(pick(50, 0.5).choice, "cold");
    assert.equal(pick(51, 0.5).choice, "warm");
  });

  it("below the threshold routes to the least-loaded worker, as SGLang's code does (not to the smallest tree)", () => {
    const policy = createPolicy("sglang-cache-aware");
    dispatch(policy, "big", request(500, {}, 7), "empty-tree-but-busy"); // not this prompt's prefix
    const d = policy.select(prompt, [candidate("empty-tree-but-busy", { inFlight: 3 }), candidate("small-load", { inFlight: 1 })], context());
    assert.equal(d.choice, "small-load");
  });

  it("breaks load ties by fewer requests routed there, then by list order", () => {
    const policy = createPolicy("sglang-cache-aware");
    const cs = [candidate("a"), candidate("b"), candidate("c")];
    assert.equal(policy.select(prompt, cs, context()).choice, "a");
    dispatch(policy, "r1", request(1, {}, 9), "a");
    assert.equal(policy.select(prompt, cs, context()).choice, "b");
    dispatch(policy, "r2", request(1, {}, 9), "b");
    assert.equal(policy.select(prompt, cs, context()).choice, "c");
  });

  it("names the worker that inserted the deepest node first when several hold it", () => {
    for (const [first, second] of [
      ["a", "b"],
      ["b", "a"],
    ] as const) {
      const policy = createPolicy("sglang-cache-aware");
      dispatch(policy, "r1", prompt, first, 1);
      dispatch(policy, "r2", prompt, second, 2);
      const d = policy.select(prompt, [candidate("a", { inFlight: 2 }), candidate("b", { inFlight: 2 })], context());
      assert.equal(d.choice, first);
    }
  });

  it("falls to the first healthy worker when the deepest match is on an unhealthy one", () => {
    const policy = warmOn("sick");
    const d = policy.select(prompt, [candidate("sick", { healthy: false }), candidate("x", { inFlight: 3 }), candidate("y")], context());
    assert.equal(d.choice, "x");
    assert.match(d.reason ?? "", /first-healthy/);
  });

  it("learns only from dispatch events: select() alone changes nothing", () => {
    const policy = createPolicy("sglang-cache-aware");
    const cs = [candidate("a"), candidate("b", { inFlight: 1 })];
    for (let i = 0; i < 3; i++) assert.equal(policy.select(prompt, cs, context()).choice, "a");
    dispatch(policy, "r1", prompt, "b");
    const d = policy.select(prompt, cs, context());
    assert.equal(d.choice, "b");
    assert.equal(d.predictedCachedTokens, 1600);
    assert.deepEqual(
      d.scores.map((s) => s.matchedBlocks),
      [0, 100],
    );
  });
});

describe("sglang-cache-aware: bad input", () => {
  it("rejects bad options, naming the field", () => {
    assert.throws(() => createPolicy("sglang-cache-aware", { sglang: { cacheThreshold: 1.5 } }), /options\.sglang\.cacheThreshold: must be <= 1/);
    assert.throws(() => createPolicy("sglang-cache-aware", { sglang: { balanceAbsThreshold: Number.NaN } }), RoutingInputError);
    assert.throws(() => createPolicy("sglang-cache-aware", { sglang: { balanceRelThreshold: -1 } }), /options\.sglang\.balanceRelThreshold/);
  });

  it("rejects bad keys, bad candidates and malformed events", () => {
    const policy = createPolicy("sglang-cache-aware");
    assert.throws(() => policy.select(request(2, { keys: [1, -2] }), [candidate("a")], context()), /keys\[1\]/);
    assert.throws(() => policy.select(prompt, [candidate("a", { kvCapacityTokens: 0 })], context()), /candidates\[0\]\.kvCapacityTokens/);
    assert.throws(
      () =>
        policy.observe!({
          kind: "dispatch",
          requestId: "",
          replicaId: "a",
          request: prompt,
          decision: { choice: "a", scores: [], predictedCachedTokens: 0 },
          now: 0,
        }),
      /event\.requestId/,
    );
    assert.throws(() => policy.observe!({ kind: "bogus" } as never), RoutingInputError);
  });
});
