import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { applyCacheReport, captureDispatch, horizonBracket, nextHorizon, type DispatchSnapshot } from "./cache-feedback";
import { traceBlockKeys } from "./keys";
import { PrefixIndex } from "./prefix-index";
import type { Decision, RequestView } from "./types";

const TPB = 512;
const chain = (root: number, n: number) => traceBlockKeys(Array.from({ length: n }, (_, i) => root * 10_000 + i));

/** A trace request as the simulator admits it: its engines report cached blocks exactly. */
function view(keys: readonly number[], inputTokens = keys.length * TPB): RequestView {
  return { keys, inputTokens, tokensPerBlock: TPB, exactCachedReports: true, sessionKey: "s", clientRegion: "us" };
}

/** What a policy would have decided for `replica` with the index's current match. */
function dispatch(index: PrefixIndex, v: RequestView, replica: string, now: number): DispatchSnapshot {
  const depth = index.match(v.keys, now, [replica]).depthByReplica.get(replica) ?? 0;
  const decision: Decision = {
    choice: replica,
    scores: [{ id: replica, score: 0, matchedBlocks: depth }],
    predictedCachedTokens: Math.min(depth * v.tokensPerBlock, v.inputTokens),
  };
  return captureDispatch(index, v, decision, now);
}

function routesOfChain(index: PrefixIndex, keys: readonly number[]) {
  return keys.map((k) => index.routesOf(k));
}

describe("cache-report feedback", () => {
  it("a lower report trims the replica past the reported prefix and lowers its horizon", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const keys = chain(1, 10);
    index.learn(keys.slice(0, 10), "r", "LOCAL", 0); // the conversation's first turn
    index.learn(keys.slice(0, 4), "r", "LOCAL", 50_000); // another request refreshed its first 4 blocks
    const snap = dispatch(index, view(keys), "r", 100_000);
    assert.equal(snap.predictedBlocks, 10);
    const result = applyCacheReport(index, snap, { cachedTokens: 4 * TPB, promptTokens: 10 * TPB }, 101_000);
    assert.equal(result.verdict, "lower");
    assert.equal(result.reportedBlocks, 4);
    assert.equal(result.trimmed, 6);
    assert.equal(index.match(keys, 101_000).depthByReplica.get("r"), 4);
    // Block 4, learned at 0, was gone at 100 s; block 3, learned at 50 s, was held: horizon in (50 s, 100 s].
    assert.equal(result.horizonMs, 100_000);
    assert.equal(index.replicaView("r").horizonMs, 100_000);
  });

  it("a trim spares routes re-learned after the request was dispatched", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const keys = chain(2, 8);
    index.learn(keys, "r", "LOCAL", 0);
    const snap = dispatch(index, view(keys), "r", 10_000);
    index.learn(keys, "r", "LOCAL", 10_500); // the 2xx headers: the engine is computing the prompt now
    const result = applyCacheReport(index, snap, { cachedTokens: 2 * TPB, promptTokens: 8 * TPB }, 12_000);
    assert.equal(result.verdict, "lower");
    assert.equal(result.trimmed, 0);
    assert.equal(index.match(keys, 12_000).maxDepth, 8, "the engine holds the whole prompt again");
    // The ages at dispatch still count: blocks learned at 0 were lost at 10 s, whatever came later.
    assert.equal(result.horizonMs, null, "one learn time on both sides of the cut: no age evidence");
  });

  it("a higher report learns the prefix the index had missed", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const keys = chain(3, 6);
    index.learn(keys.slice(0, 2), "r", "LOCAL", 0);
    const snap = dispatch(index, view(keys), "r", 1_000);
    assert.equal(snap.predictedBlocks, 2);
    const result = applyCacheReport(index, snap, { cachedTokens: 5 * TPB, promptTokens: 6 * TPB }, 2_000);
    assert.equal(result.verdict, "higher");
    assert.equal(result.learned, 5);
    assert.equal(index.match(keys, 2_000).depthByReplica.get("r"), 5);
  });

  it("a higher report on routes hidden by the horizon raises the horizon", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const keys = chain(4, 6);
    index.learn(keys, "r", "LOCAL", 0);
    index.setReplicaHorizon("r", 20_000);
    const snap = dispatch(index, view(keys), "r", 60_000);
    assert.equal(snap.predictedBlocks, 0, "hidden by the horizon");
    assert.equal(snap.profile.depth, 6, "but still stored");
    const result = applyCacheReport(index, snap, { cachedTokens: 6 * TPB, promptTokens: 6 * TPB }, 61_000);
    assert.equal(result.verdict, "higher");
    assert.equal(result.horizonMs, 60_000, "the engine kept blocks 60 s old");
  });

  it("a report as predicted changes nothing", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const keys = chain(5, 5);
    index.learn(keys, "r", "LOCAL", 0);
    const snap = dispatch(index, view(keys, 5 * TPB - 100), "r", 1_000);
    // The last key stands for a partial block: the engine reports the whole prompt.
    const result = applyCacheReport(index, snap, { cachedTokens: 5 * TPB - 100, promptTokens: 5 * TPB - 100 }, 1_500);
    assert.equal(result.verdict, "as-predicted");
    assert.deepEqual([result.trimmed, result.learned, result.horizonMs], [0, 0, null]);
  });

  it("losing blocks far younger than the replica keeps is a lost cache; ordinary turnover is not", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    index.setReplicaHorizon("r", 100_000);
    const old = chain(9, 6);
    const fresh = chain(10, 6);
    index.learn(old, "r", "LOCAL", 0);
    index.learn(fresh, "r", "LOCAL", 85_000);
    // Turnover: a block 90 s old (the horizon is 100 s) is gone.
    const turnover = applyCacheReport(index, dispatch(index, view(old), "r", 90_000), { cachedTokens: 0 }, 90_500);
    assert.equal(turnover.verdict, "lower");
    assert.equal(turnover.cacheLost, false);
    // A flush: blocks learned 5 s before, when the replica keeps them ~90 s, are gone.
    const flushed = applyCacheReport(index, dispatch(index, view(fresh), "r", 90_000), { cachedTokens: 0 }, 90_500);
    assert.equal(flushed.cacheLost, true);
  });

  it("bad or missing usage fields change nothing and raise nothing", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const keys = chain(6, 6);
    index.learn(keys, "r", "LOCAL", 0);
    const before = JSON.stringify([routesOfChain(index, keys), index.stats(), index.replicaView("r")]);
    const snap = dispatch(index, view(keys), "r", 100_000);
    const bad: unknown[] = [
      undefined,
      null,
      {},
      { cachedTokens: null },
      { cachedTokens: "12" },
      { cachedTokens: Number.NaN },
      { cachedTokens: -5 },
      { cachedTokens: Number.POSITIVE_INFINITY },
      { cachedTokens: [] },
      { cachedTokens: { value: 3 } },
    ];
    for (const usage of bad) {
      const result = applyCacheReport(index, snap, usage as { cachedTokens: unknown }, 101_000);
      assert.equal(result.verdict, "unreported", JSON.stringify(usage));
    }
    // A bad prompt_tokens is ignored (no unit correction), the cached count still counts.
    assert.equal(applyCacheReport(index, snap, { cachedTokens: 6 * TPB, promptTokens: "x" }, 101_000).verdict, "as-predicted");
    const after = JSON.stringify([
      routesOfChain(index, keys),
      { ...index.stats(), lookups: JSON.parse(before)[1].lookups, hits: JSON.parse(before)[1].hits, matchedBlocks: JSON.parse(before)[1].matchedBlocks },
      index.replicaView("r"),
    ]);
    assert.equal(after, before);
  });

  it("chat units: scales by the engine's prompt tokens and tolerates one block of rounding", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const keys = chain(7, 40); // 40 chat blocks of ~16 estimated tokens
    index.learn(keys, "r", "LOCAL", 0);
    const chat: RequestView = { keys, inputTokens: 650, tokensPerBlock: 16, keyChars: 64, sessionKey: "s", clientRegion: "us" };
    const snap = dispatch(index, chat, "r", 5_000);
    assert.equal(snap.predictedBlocks, 40);
    // The engine counted 800 prompt tokens (our 16/block estimate was low) and had 780 cached:
    // 780 × 650/800 = 634 of our tokens, within a block of the whole prompt.
    assert.equal(applyCacheReport(index, snap, { cachedTokens: 780, promptTokens: 800 }, 5_500).verdict, "as-predicted");
    // 400 of 800: half the prompt, blocks 20.. are gone.
    const lower = applyCacheReport(index, snap, { cachedTokens: 400, promptTokens: 800 }, 6_000);
    assert.equal(lower.verdict, "lower");
    assert.equal(lower.reportedBlocks, 20);
    assert.equal(index.match(keys, 6_000).maxDepth, 20);
  });

  it("chat units: a report one block short (within the rounding slack) leaves the horizon and older routes alone", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const tpb = 16;
    const convo = traceBlockKeys([11, ...Array.from({ length: 30 }, (_, i) => 1_000 + i)]); // a conversation 60 s old
    index.learn(convo, "r", "LOCAL", 0);
    index.learn(traceBlockKeys([11, 2_000, 2_001]), "r", "LOCAL", 59_000); // 1 s ago: refreshed the shared first block
    const keys = traceBlockKeys([11, 3_000, 3_001, 3_002]); // shares only the first (system prompt) block
    const chat: RequestView = { keys, inputTokens: 60, tokensPerBlock: tpb, keyChars: 64, sessionKey: "s", clientRegion: "us" };
    const snap = dispatch(index, chat, "r", 60_000);
    assert.equal(snap.predictedBlocks, 1);
    // The engine counted 75 prompt tokens (template tokens in front) and cached none: its KV page was
    // not filled by the shared text. One block short of the prediction is rounding.
    const result = applyCacheReport(index, snap, { cachedTokens: 0, promptTokens: 75 }, 60_500);
    assert.equal(result.verdict, "as-predicted");
    assert.equal(result.horizonMs, null, "the horizon fell to the shared block's 1 s age");
    assert.equal(index.match(convo, 61_000).depthByReplica.get("r"), convo.length, "the engine's older conversation is hidden from routing");
  });
});

describe("rounding slack on chat keys", () => {
  // vLLM computes at least one prompt token: a full hit on 16-token pages reports the whole pages
  // before the prompt's last token.
  const vllmCached = (promptTokens: number) => Math.floor((promptTokens - 1) / 16) * 16;
  const chatView = (keys: readonly number[], inputTokens: number): RequestView => ({
    keys,
    inputTokens,
    tokensPerBlock: 16,
    keyChars: 64,
    sessionKey: "s",
    clientRegion: "us",
  });

  it("a full hit reads as-predicted also when prompt_tokens equals the LB's estimate", () => {
    for (const promptTokens of [240, 241]) {
      const index = new PrefixIndex({ capacityBlocks: 1000 });
      const keys = chain(3, 15); // 960 canonical characters: 15 keys, estimated 240 tokens
      index.learn(keys, "r", "LOCAL", 0);
      const snap = dispatch(index, chatView(keys, 240), "r", 1_000);
      const result = applyCacheReport(index, snap, { cachedTokens: vllmCached(promptTokens), promptTokens }, 1_500);
      assert.equal(result.verdict, "as-predicted", `prompt_tokens ${promptTokens}`);
      assert.equal(result.trimmed, 0);
      assert.equal(index.match(keys, 2_000).maxDepth, 15);
    }
  });

  it("a one-block prompt the engine holds leaves the replica's horizon alone", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const keys = chain(4, 1);
    index.learn(keys, "r", "LOCAL", 0);
    const snap = dispatch(index, chatView(keys, 16), "r", 100);
    const result = applyCacheReport(index, snap, { cachedTokens: vllmCached(16), promptTokens: 16 }, 200);
    assert.equal(result.verdict, "as-predicted");
    assert.equal(result.horizonMs, null, "the horizon fell to the block's 100 ms age");
  });

  it("keys sized in tokens keep the slack unless the reports are known exact (the simulator's)", () => {
    // A token-id prompt as the proxy admits it: 16 ids a key, no keyChars, its count exact.
    const ids = (exactCachedReports: boolean): RequestView => ({
      keys: chain(6, 4),
      inputTokens: 64,
      tokensPerBlock: 16,
      exactCachedReports,
      sessionKey: "s",
      clientRegion: "us",
    });
    const judge = (v: RequestView) => {
      const index = new PrefixIndex({ capacityBlocks: 1000 });
      index.learn(v.keys, "r", "LOCAL", 0);
      const snap = dispatch(index, v, "r", 1_000);
      return applyCacheReport(index, snap, { cachedTokens: vllmCached(64), promptTokens: 64 }, 1_500).verdict;
    };
    assert.equal(judge(ids(false)), "as-predicted", "vLLM's full hit on a 64-id prompt (48 cached) read as a lost block");
    assert.equal(judge(ids(true)), "lower", "an engine that reports exactly held 3 of 4 blocks");
  });

  it("trace keys with agreeing counts still compare exactly", () => {
    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const keys = chain(5, 4);
    index.learn(keys, "r", "LOCAL", 0);
    const snap = dispatch(index, view(keys), "r", 1_000);
    assert.equal(applyCacheReport(index, snap, { cachedTokens: 3 * TPB, promptTokens: 4 * TPB }, 1_500).verdict, "lower");
  });
});

describe("horizon bracket", () => {
  const snap = (runs: { end: number; learnedAt: number }[], depth: number): DispatchSnapshot => ({
    replicaId: "r",
    keys: chain(8, 10),
    predictedBlocks: depth,
    predictedTokens: depth * TPB,
    decisionTokens: depth * TPB,
    profile: { depth, runs },
    dispatchedAt: 100,
    inputTokens: 10 * TPB,
    tokensPerBlock: TPB,
    exactReports: true,
    keepMs: null,
  });

  it("brackets the horizon between the last held and the first lost block's ages", () => {
    const s = snap(
      [
        { end: 3, learnedAt: 90 },
        { end: 8, learnedAt: 40 },
      ],
      8,
    );
    assert.deepEqual(horizonBracket(s, 3), { heldAge: 10, lostAge: 60 });
    assert.deepEqual(horizonBracket(s, 8), { heldAge: 60, lostAge: Infinity });
    assert.deepEqual(horizonBracket(s, 0), { heldAge: -Infinity, lostAge: 10 });
    assert.equal(horizonBracket(s, 2), null, "a cut inside one learn says nothing about age");
    assert.equal(horizonBracket(snap([], 0), 0), null);
  });

  it("moves the horizon to the violated end only", () => {
    assert.equal(nextHorizon(null, { heldAge: 10, lostAge: 60 }), 60);
    assert.equal(nextHorizon(30, { heldAge: 10, lostAge: 60 }), 30);
    assert.equal(nextHorizon(5, { heldAge: 10, lostAge: 60 }), 10);
    assert.equal(nextHorizon(100, { heldAge: 10, lostAge: 60 }), 60);
    assert.equal(nextHorizon(5, { heldAge: 10, lostAge: Infinity }), 10);
    assert.equal(nextHorizon(null, { heldAge: 10, lostAge: Infinity }), null);
    assert.equal(nextHorizon(7, null), 7);
  });
});
