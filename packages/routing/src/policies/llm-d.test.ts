import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RoutingInputError } from "../errors";
import { createPolicy } from "../select";
import type { CandidateView } from "../types";
import { candidate, context, dispatch, request } from "./test-support";

// Keys of 16 tokens without keyChars (trace-style): one llm-d block (64 tokens) is round(64 / 16) = 4
// keys, as for chat keys (keyChars 64) in any calibration; the chat path is tested below.
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

  it("forgets a replica that left or was re-pointed, and sizes its next LRU for the engine there now", () => {
    const policy = createPolicy("llm-d");
    const req = request(64); // 64 keys of 16 tokens: 16 llm-d blocks
    // The old engine at `a`: a KV cache of one llm-d block.
    policy.select(req, [candidate("a", { kvCapacityTokens: 64 }), candidate("b")], context());
    dispatch(policy, "1", req, "a");
    assert.equal(policy.select(req, [candidate("a"), candidate("b")], context()).scores[0]?.matchedBlocks, 0, "one block held, the prompt's last");
    policy.observe?.({ kind: "replica-removed", replicaId: "a" });
    // The new engine at `a`: a large cache, as `b` has.
    const big = [candidate("a", { kvCapacityTokens: 1_000_000 }), candidate("b", { kvCapacityTokens: 1_000_000 })];
    policy.select(req, big, context());
    dispatch(policy, "2", req, "a");
    dispatch(policy, "3", req, "b");
    const d = policy.select(req, big, context());
    assert.deepEqual(
      d.scores.map((s) => s.matchedBlocks),
      [64, 64],
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

describe("llm-d: chat keys are grouped by characters (256-byte blocks), not by calibrated tokens", () => {
  // llm-d's default estimate producer packs 4 bytes per pseudo-token into 64-token blocks: 256 bytes,
  // 4 chat keys of 64 characters, whatever the LB's chars-per-token calibration says.
  function chat(keys: number[], charsPerToken: number) {
    // As the LB core builds it (lb-core admit): tokensPerBlock = 64 / chars-per-token, keyChars 64.
    return request(0, { keys, inputTokens: Math.ceil((keys.length * 64) / charsPerToken), tokensPerBlock: 64 / charsPerToken, keyChars: 64 });
  }
  const shared = [11, 12, 13, 14]; // the first 256 characters
  for (const cpt of [3, 4, 5]) {
    it(`credits a server holding the first 256-byte block at ${cpt} chars/token`, () => {
      const policy = createPolicy("llm-d");
      dispatch(policy, "earlier", chat([...shared, 901, 902, 903, 904, 905, 906], cpt), "a"); // diverges at character 256
      const d = policy.select(
        chat([...shared, 15, 16, 17, 18, 19, 20], cpt),
        [candidate("a", scraped(0, 500, 1000)), candidate("b", scraped(0, 300, 1000))],
        context(),
      );
      // 640 characters: 2 full blocks + a partial one = 3; a matches block 0.
      // a = 3·(1/3) + 2·0.5 + 2 = 4.0, b = 0 + 2·0.7 + 2 = 3.4.
      assert.equal(d.scores[0]!.matchedBlocks, 4);
      assert.ok(Math.abs(d.scores[0]!.score + 4) < 1e-9, `a scored ${d.scores[0]!.score}`);
      assert.equal(d.choice, "a");
    });
  }

  it("sizes a chat LRU to num_gpu_blocks entries whatever the calibration", () => {
    // 1024 tokens / 16 = 64 gpu blocks = 64 llm-d blocks. A 65-block prompt (260 keys) evicts its first
    // block, so nothing matches; a 64-block one (256 keys) fits and matches whole. (Grouping 5 keys at
    // 5 chars/token, as before, made 52 blocks of the first and kept them all.)
    const keys = (n: number) => Array.from({ length: n }, (_, i) => 5000 + i);
    for (const [n, matched] of [
      [260, 0],
      [256, 256],
    ] as const) {
      const policy = createPolicy("llm-d");
      const cs = [candidate("a", { kvCapacityTokens: 1024 }), candidate("b")];
      policy.select(chat(keys(n), 5), cs, context());
      dispatch(policy, "earlier", chat(keys(n), 5), "a");
      assert.equal(policy.select(chat(keys(n), 5), cs, context()).scores[0]!.matchedBlocks, matched, `${n} keys`);
    }
  });

  it("rejects a keyChars that is not a positive number", () => {
    const bad = request(8, { keyChars: 0 });
    assert.throws(() => createPolicy("llm-d").select(bad, [candidate("a")], context()), /keyChars/);
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
