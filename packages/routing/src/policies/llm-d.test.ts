import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RoutingInputError } from "../errors";
import { createPolicy } from "../select";
import type { CandidateView } from "../types";
import { candidate, context, dispatch, request } from "./test-support";

// Chat keys: 64 characters = 16 tokens per key, so one llm-d block (64 tokens) is 4 keys.
const prompt = request(40); // 40 keys = 10 llm-d blocks, 640 tokens

function scraped(waiting: number, usedTokens = 0, kvCapacityTokens?: number): Partial<CandidateView> {
  return { scraped: { running: 0, waiting, usedTokens }, ...(kvCapacityTokens === undefined ? {} : { kvCapacityTokens }) };
}

describe("llm-d: scores normalized and weighted 3:2:2 (prefix : kv : queue)", () => {
  it("scores each candidate −(3·matched/total + 2·(1 − kv use) + 2·(max − waiting)/(max − min))", () => {
    const policy = createPolicy("llm-d");
    dispatch(policy, "earlier", request(20), "b"); // b holds 5 of the prompt's 10 llm-d blocks
    const d = policy.select(
      prompt,
      [candidate("a", scraped(0, 250, 1000)), candidate("b", scraped(4, 500, 1000)), candidate("c", scraped(10, 0, 1000))],
      context(),
    );
    assert.deepEqual(
      d.scores.map((s) => s.score),
      [-(3 * 0 + 2 * 0.75 + 2 * 1), -(3 * 0.5 + 2 * 0.5 + 2 * 0.6), -(3 * 0 + 2 * 1 + 2 * 0)],
    );
    assert.equal(d.choice, "b", "a 3.5, b 3.7, c 2");
  });

  it("gives every candidate queue score 1 when their waiting counts are equal, and KV score 1 without a capacity", () => {
    const d = createPolicy("llm-d").select(prompt, [candidate("a", scraped(3, 900)), candidate("b", scraped(3, 10))], context());
    assert.deepEqual(
      d.scores.map((s) => s.score),
      [-(0 + 2 + 2), -(0 + 2 + 2)],
    );
  });

  it("picks by the default weights (3:2:2) where 2:1:1 would pick otherwise", () => {
    // a: whole prompt cached, longest queue, full KV → 3·1 + 2·0 + 2·0 = 3   (2:1:1 → 2)
    // b: nothing cached, empty queue, KV 40 % used   → 0 + 2·0.6 + 2·1 = 3.2 (2:1:1 → 1.6)
    const cs = () => [candidate("a", scraped(9, 1000, 1000)), candidate("b", scraped(0, 400, 1000))];
    const byDefault = createPolicy("llm-d");
    dispatch(byDefault, "earlier", prompt, "a");
    assert.equal(byDefault.select(prompt, cs(), context()).choice, "b");
    const sample = createPolicy("llm-d", { llmd: { prefixWeight: 2, kvCacheWeight: 1, queueWeight: 1 } });
    dispatch(sample, "earlier", prompt, "a");
    assert.equal(sample.select(prompt, cs(), context()).choice, "a");
  });

  it("breaks equal scores at random", () => {
    const policy = createPolicy("llm-d");
    const ctx = context(1000, 7);
    const picks = new Set(Array.from({ length: 60 }, () => policy.select(prompt, [candidate("a"), candidate("b")], ctx).choice));
    assert.deepEqual([...picks].sort(), ["a", "b"]);
  });
});

describe("llm-d: the approximate prefix index", () => {
  it("hashes 64-token blocks (4 chat keys each) and counts the prompt's trailing partial block", () => {
    const policy = createPolicy("llm-d");
    dispatch(policy, "earlier", request(7), "a"); // 7 keys: one full llm-d block
    const d = policy.select(request(40, { inputTokens: 650 }), [candidate("a"), candidate("b")], context());
    // 650 tokens = 10 full blocks + a partial one: 11 blocks, 1 matched.
    assert.equal(d.scores[0]!.score, -(3 * (1 / 11) + 2 + 2));
    assert.equal(d.scores[0]!.matchedBlocks, 4);
    assert.equal(d.choice, "a");
  });

  it("uses trace blocks one for one when they are larger than llm-d's", () => {
    const policy = createPolicy("llm-d");
    const trace = request(10, { tokensPerBlock: 512, inputTokens: 5000 });
    dispatch(policy, "earlier", request(4, { tokensPerBlock: 512, inputTokens: 2048 }), "a");
    const d = policy.select(trace, [candidate("a"), candidate("b")], context());
    assert.equal(d.scores[0]!.score, -(3 * (4 / 10) + 4));
  });

  it("sizes each server's LRU to num_gpu_blocks from its KV capacity and evicts a prompt's first block first", () => {
    // 1024 tokens / 16-token engine blocks = 64 gpu blocks → 64 entries of 64 tokens. A 70-block prompt
    // leaves blocks 6..69: the walk stops at block 0, so nothing matches any more.
    const long = request(280);
    const small = createPolicy("llm-d");
    small.select(long, [candidate("a", { kvCapacityTokens: 1024 })], context());
    dispatch(small, "earlier", long, "a");
    assert.equal(small.select(long, [candidate("a", { kvCapacityTokens: 1024 }), candidate("b")], context()).scores[0]!.matchedBlocks, 0);
    // Without a capacity the LRU takes llm-d's default 31250 entries and keeps the whole prompt.
    const roomy = createPolicy("llm-d");
    dispatch(roomy, "earlier", long, "a");
    assert.equal(roomy.select(long, [candidate("a"), candidate("b")], context()).scores[0]!.matchedBlocks, 280);
  });

  it("counts every block a server holds on the walk, stopping at the first block nobody holds", () => {
    const policy = createPolicy("llm-d", { llmd: { lruCapacityPerServer: 2 } });
    dispatch(policy, "r1", request(16), "a"); // a keeps llm-d blocks 2 and 3 only
    dispatch(policy, "r2", request(12), "b"); // b keeps blocks 1 and 2
    const d = policy.select(request(16), [candidate("a"), candidate("b")], context());
    // Nobody holds block 0: the walk stops at once, although both hold later blocks.
    assert.deepEqual(
      d.scores.map((s) => s.matchedBlocks),
      [0, 0],
    );
    dispatch(policy, "r3", request(4), "b"); // b now keeps blocks 2 and 0: the walk counts block 0, stops at 1
    const e = policy.select(request(16), [candidate("a"), candidate("b")], context());
    assert.deepEqual(
      e.scores.map((s) => s.matchedBlocks),
      [0, 4],
    );
  });

  it("learns only from dispatch events", () => {
    const policy = createPolicy("llm-d");
    const cs = [candidate("a"), candidate("b")];
    policy.select(prompt, cs, context());
    assert.deepEqual(
      policy.select(prompt, cs, context()).scores.map((s) => s.matchedBlocks),
      [0, 0],
    );
  });
});

describe("llm-d: bad input", () => {
  it("rejects bad options, naming the field", () => {
    assert.throws(() => createPolicy("llm-d", { llmd: { prefixWeight: -1 } }), /options\.llmd\.prefixWeight/);
    assert.throws(() => createPolicy("llm-d", { llmd: { prefixWeight: 0, kvCacheWeight: 0, queueWeight: 0 } }), /options\.llmd: at least one/);
    assert.throws(() => createPolicy("llm-d", { llmd: { lruCapacityPerServer: 1.5 } }), /options\.llmd\.lruCapacityPerServer: must be an integer/);
  });

  it("rejects bad keys, candidates and events", () => {
    const policy = createPolicy("llm-d");
    assert.throws(() => policy.select(request(2, { keys: [1, 2.5] }), [candidate("a")], context()), /keys\[1\]/);
    assert.throws(() => policy.select(prompt, [candidate("a", { kvCapacityTokens: Number.NaN })], context()), /kvCapacityTokens/);
    assert.throws(() => dispatch(policy, "r", request(2, { keys: [1, -1] }), "a"), /event\.request\.keys\[1\]/);
    assert.throws(() => policy.observe!({ kind: "complete", requestId: "r", now: Number.NaN }), RoutingInputError);
  });
});
