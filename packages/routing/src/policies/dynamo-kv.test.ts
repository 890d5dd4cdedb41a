import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RoutingInputError } from "../errors";
import { createPolicy } from "../select";
import { softmaxSample } from "./dynamo-kv";
import { candidate, context, dispatch, fixedRng, placed, request } from "./test-support";

// Costs are in blocks of 16 tokens. The incoming prompt: 10 blocks, 160 tokens.
const prompt = request(10);
const cs = () => [candidate("a"), candidate("b")];

describe("dynamo-kv: the cost arithmetic", () => {
  it("charges prefill_load_scale·max(active prefill + prompt − overlap, 0) + active blocks + new blocks", () => {
    const policy = createPolicy("dynamo-kv");
    dispatch(policy, "old", request(4), "a"); // a's index learns 4 blocks of the prompt...
    policy.observe!({ kind: "complete", requestId: "old", now: 0 }); // ...and the request ends
    // b: a live request still in prefill, 32 tokens booked (48-token prompt, 1 block predicted cached),
    // holding 3 blocks of another prompt.
    dispatch(policy, "live", request(3, {}, 5), "b", 0, placed("b", 1));
    const d = policy.select(prompt, cs(), context());
    // a: (0 + 160)/16 − 4 = 6 prefill, 0 + 10 decode → 16.  b: (32 + 160)/16 = 12 prefill, 3 + 10 decode → 25.
    assert.deepEqual(
      d.scores.map((s) => s.score),
      [16, 25],
    );
    assert.deepEqual(
      d.scores.map((s) => s.matchedBlocks),
      [4, 0],
    );
    assert.equal(d.choice, "a");
    assert.equal(d.predictedCachedTokens, 64);

    policy.observe!({ kind: "first-token", requestId: "live", now: 1 });
    assert.equal(policy.select(prompt, cs(), context()).scores[1]!.score, 10 + 13, "prefill tokens leave at the first token");
    policy.observe!({ kind: "complete", requestId: "live", now: 2 });
    assert.equal(policy.select(prompt, cs(), context()).scores[1]!.score, 10 + 10, "blocks leave at completion");
  });

  it("counts blocks shared with live requests on the worker once", () => {
    const policy = createPolicy("dynamo-kv");
    dispatch(policy, "live", request(6), "a"); // same prompt prefix: 6 of its 10 blocks
    const d = policy.select(prompt, cs(), context());
    // a: prefill (96 + 160)/16 − 6 = 10; decode 6 live + 4 new = 10 → 20.  b: 10 + 10 → 20.
    assert.deepEqual(
      d.scores.map((s) => s.score),
      [20, 20],
    );
  });

  it("applies overlap credit, prefill scale and the active-request weight as configured", () => {
    const policy = createPolicy("dynamo-kv", { dynamo: { overlapScoreCredit: 0.5, prefillLoadScale: 2, decodeActiveRequestWeight: 3 } });
    dispatch(policy, "live", request(4), "a");
    const d = policy.select(prompt, cs(), context());
    // a: 2·((64 + 160)/16 − 0.5·4) + (4 + 6) + 3·1 = 2·12 + 10 + 3 = 37.  b: 2·10 + 10 = 30.
    assert.deepEqual(
      d.scores.map((s) => s.score),
      [37, 30],
    );
    assert.equal(d.choice, "b");
  });

  it("decays the overlap credit by excess active prefill when overlap_score_credit_decay > 0", () => {
    const policy = createPolicy("dynamo-kv", { dynamo: { overlapScoreCreditDecay: 1 } });
    dispatch(policy, "warm", request(10), "a"); // a: prompt cached, 160 tokens still in prefill
    const d = policy.select(prompt, cs(), context());
    // excess = 160/16 = 10 blocks over b's 0; normalised by the prompt's 10 blocks = 1 → credit × 1/2.
    // a: (160 + 160)/16 − 10·0.5 = 15, decode 10 + 0 → 25.  b: 10 + 10 → 20.
    assert.deepEqual(
      d.scores.map((s) => s.score),
      [25, 20],
    );
  });

  it("forgets the approximate index 120 s after the prompt was last routed", () => {
    const policy = createPolicy("dynamo-kv");
    dispatch(policy, "r", prompt, "a", 0);
    policy.observe!({ kind: "complete", requestId: "r", now: 1 });
    assert.equal(policy.select(prompt, cs(), context(119_999)).scores[0]!.matchedBlocks, 10);
    assert.equal(policy.select(prompt, cs(), context(120_001)).scores[0]!.matchedBlocks, 0);
  });
});

describe("dynamo-kv: temperature", () => {
  it("at 0 takes the cheapest, ties at random", () => {
    const policy = createPolicy("dynamo-kv");
    const ctx = context(1000, 3);
    const picks = new Set(Array.from({ length: 60 }, () => policy.select(prompt, cs(), ctx).choice));
    assert.deepEqual([...picks].sort(), ["a", "b"]);
    dispatch(policy, "live", request(2, {}, 9), "b");
    for (let i = 0; i < 20; i++) assert.equal(policy.select(prompt, cs(), ctx).choice, "a");
  });

  it("above 0 samples P ∝ exp(−(cost − min) / ((max − min)·T))", () => {
    // costs 10 and 20 at T = 1: P(a) = 1 / (1 + e^−1) = 0.7311.
    const allowed = [true, true];
    assert.equal(softmaxSample([10, 20], allowed, 1, fixedRng(0.731)), 0);
    assert.equal(softmaxSample([10, 20], allowed, 1, fixedRng(0.732)), 1);
    // T = 0.5 sharpens it: P(a) = 1 / (1 + e^−2) = 0.8808.
    assert.equal(softmaxSample([10, 20], allowed, 0.5, fixedRng(0.88)), 0);
    assert.equal(softmaxSample([10, 20], allowed, 0.5, fixedRng(0.881)), 1);
    // Equal costs: uniform; the excluded candidate never.
    assert.equal(softmaxSample([5, 5, 5], [true, false, true], 1, fixedRng(0.49)), 0);
    assert.equal(softmaxSample([5, 5, 5], [true, false, true], 1, fixedRng(0.51)), 2);
  });

  it("routes through the sampler when configured", () => {
    const policy = createPolicy("dynamo-kv", { dynamo: { routerTemperature: 1 } });
    dispatch(policy, "live", request(10, {}, 9), "b"); // b: (160 + 160)/16 + 10 + 10 = 40 vs a: 20
    const ctx = { ...context(), rng: fixedRng(0.74) }; // P(a) = 0.7311
    const d = policy.select(prompt, cs(), ctx);
    assert.equal(d.choice, "b");
    assert.match(d.reason ?? "", /softmax\(T=1\)/);
  });
});

describe("dynamo-kv: bounded books and bad input", () => {
  it("books at most maxTrackedRequests live requests, freeing the oldest", () => {
    const policy = createPolicy("dynamo-kv", { dynamo: { maxTrackedRequests: 2 } });
    for (const id of ["r1", "r2", "r3"]) dispatch(policy, id, request(5, {}, 9), "b");
    // Two live requests share the same 5 blocks: b = (2·80 + 160)/16 + 5 + 10 = 35.
    assert.equal(policy.select(prompt, cs(), context()).scores[1]!.score, 35);
  });

  it("ignores events for requests it never booked", () => {
    const policy = createPolicy("dynamo-kv");
    policy.observe!({ kind: "first-token", requestId: "ghost", now: 0 });
    policy.observe!({ kind: "complete", requestId: "ghost", now: 0 });
    assert.deepEqual(
      policy.select(prompt, cs(), context()).scores.map((s) => s.score),
      [20, 20],
    );
  });

  it("rejects bad options, keys and events, naming the field", () => {
    assert.throws(() => createPolicy("dynamo-kv", { dynamo: { routerTemperature: -0.1 } }), /options\.dynamo\.routerTemperature/);
    assert.throws(() => createPolicy("dynamo-kv", { dynamo: { ttlMs: 0 } }), /options\.dynamo\.ttlMs: must be > 0/);
    const policy = createPolicy("dynamo-kv");
    assert.throws(() => policy.select(request(2, { keys: [3, Number.POSITIVE_INFINITY] }), cs(), context()), /keys\[1\]/);
    assert.throws(
      () => policy.observe!({ kind: "dispatch", requestId: "r", replicaId: "", request: prompt, decision: placed("a"), now: 0 }),
      /event\.replicaId/,
    );
    assert.throws(
      () => policy.observe!({ kind: "dispatch", requestId: "r", replicaId: "a", request: prompt, decision: null as never, now: 0 }),
      RoutingInputError,
    );
  });
});
