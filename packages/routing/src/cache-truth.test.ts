import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CacheTruth } from "./cache-truth";
import { traceBlockKeys } from "./keys";
import { PrefixIndex } from "./prefix-index";
import type { Decision, RequestView } from "./types";

const TPB = 512;
const chain = (root: number, n: number) => traceBlockKeys(Array.from({ length: n }, (_, i) => root * 10_000 + i));
/** A trace request as the simulator admits it: its engines report cached blocks exactly. */
const view = (keys: readonly number[]): RequestView => ({
  keys,
  inputTokens: keys.length * TPB,
  tokensPerBlock: TPB,
  exactCachedReports: true,
  sessionKey: "s",
  clientRegion: "us",
});

function decide(index: PrefixIndex, v: RequestView, replica: string, now: number): Decision {
  const depth = index.match(v.keys, now, [replica]).depthByReplica.get(replica) ?? 0;
  return { choice: replica, scores: [{ id: replica, score: 0, matchedBlocks: depth }], predictedCachedTokens: depth * TPB };
}

function setup() {
  const index = new PrefixIndex({ capacityBlocks: 10_000 });
  const truth = new CacheTruth(index, { windowMs: 60_000 });
  return { index, truth };
}

describe("CacheTruth", () => {
  it("keeps each replica's budget, horizon, epoch and accuracy when the LB rebuilds its index", () => {
    const { index, truth } = setup();
    const epoch = { startTimeSec: 100, counters: {} };
    truth.engineMetrics("a", { capacityTokens: 4 * TPB, epoch }, TPB, 10);
    index.setReplicaHorizon("a", 30_000);
    const keys = chain(2, 3);
    index.learn(keys, "a", "LOCAL", 0);
    const snap = truth.dispatch(view(keys), decide(index, view(keys), "a", 20), 20);
    truth.report(snap, { cachedTokens: 3 * TPB, promptTokens: 3 * TPB }, 30);
    const rebuilt = new PrefixIndex({ capacityBlocks: 5_000 });
    truth.rebind(rebuilt, TPB);
    const after = truth.state("a", 40);
    assert.equal(after.budgetBlocks, 4, "the engine's KV budget was forgotten until the next scrape");
    assert.equal(after.horizonMs, 30_000);
    assert.equal(after.reports, 1);
    assert.equal(after.routes, 0, "the new index starts empty");
    // The same engine process scraped again is no restart; a new one is, on the new index.
    assert.deepEqual(truth.engineMetrics("a", { capacityTokens: 4 * TPB, epoch }, TPB, 50), { restarted: false });
    rebuilt.learn(keys, "a", "LOCAL", 60);
    assert.deepEqual(truth.engineMetrics("a", { capacityTokens: 4 * TPB, epoch: { startTimeSec: 200, counters: {} } }, TPB, 70), { restarted: true });
    assert.equal(rebuilt.replicaView("a").routes, 0);
  });

  it("an engine restart seen in its metrics clears that replica's entries only", () => {
    const { index, truth } = setup();
    const keys = chain(1, 5);
    index.learn(keys, "a", "LOCAL", 0);
    index.learn(keys, "b", "LOCAL", 0);
    const epoch = (prompt: number) => ({ startTimeSec: null, counters: { prompt_tokens_total: prompt } });
    assert.deepEqual(truth.engineMetrics("a", { capacityTokens: null, epoch: epoch(9_000) }, TPB, 10), { restarted: false });
    assert.deepEqual(truth.engineMetrics("a", { capacityTokens: null, epoch: epoch(12_000) }, TPB, 20), { restarted: false });
    assert.deepEqual(truth.engineMetrics("a", { capacityTokens: null, epoch: epoch(300) }, TPB, 30), { restarted: true });
    const m = index.match(keys, 31);
    assert.equal(m.depthByReplica.has("a"), false);
    assert.equal(m.depthByReplica.get("b"), 5);
    const state = truth.state("a", 31);
    assert.deepEqual([state.clears, state.lastClearAt, state.lastClearReason], [1, 30, "engine-restart"]);
  });

  it("a counter that went back is a restart even when the scrape before lacked its series (a DP rank answered late)", () => {
    const { index, truth } = setup();
    const keys = chain(12, 4);
    index.learn(keys, "a", "LOCAL", 0);
    // SGLang in multiprocess mode: no start time, one series per DP rank.
    const ranks = (rank0: number | null, rank1: number | null) => ({
      capacityTokens: null,
      epoch: {
        startTimeSec: null,
        counters: {
          ...(rank0 === null ? {} : { 'prompt_tokens_total{dp_rank="0"}': rank0 }),
          ...(rank1 === null ? {} : { 'prompt_tokens_total{dp_rank="1"}': rank1 }),
        },
      },
    });
    assert.deepEqual(truth.engineMetrics("a", ranks(90_000, 80_000), TPB, 1_000), { restarted: false });
    assert.deepEqual(truth.engineMetrics("a", ranks(95_000, null), TPB, 2_000), { restarted: false }, "a missing series is no restart");
    // The engine restarted; the new process has served a few requests, all on rank 1 so far.
    assert.deepEqual(truth.engineMetrics("a", ranks(null, 300), TPB, 3_000), { restarted: true }, "rank 1 went from 80,000 to 300");
    assert.equal(index.match(keys, 3_000, ["a"]).depthByReplica.get("a"), 0, "the restarted engine's routes are still predicted");
    // The new process is the baseline now: rank 0's old value is not held against it.
    assert.deepEqual(truth.engineMetrics("a", ranks(50, 400), TPB, 4_000), { restarted: false });
  });

  it("a start time that moved is a restart even when the scrape before did not carry one", () => {
    const { truth } = setup();
    const scrape = (start: number | null, prompt: number | null) => {
      const counters: Record<string, number> = prompt === null ? {} : { "prompt_tokens_total{}": prompt };
      return { capacityTokens: null, epoch: { startTimeSec: start, counters } };
    };
    truth.engineMetrics("a", scrape(1_000, null), TPB, 1_000);
    assert.deepEqual(truth.engineMetrics("a", scrape(null, 5_000), TPB, 2_000), { restarted: false }, "this scrape lacked process_start_time_seconds");
    assert.deepEqual(truth.engineMetrics("a", scrape(9_000, 10_000), TPB, 3_000), { restarted: true }, "the start time moved from 1000 to 9000");
    assert.equal(truth.state("a", 3_000).lastClearReason, "engine-restart");
  });

  it("a run of zero-cached reports on predicted hits (a flushed cache) clears the replica", () => {
    const { index, truth } = setup();
    // Conversations learned 60, 30 and 5 s before the flush at 100 s; each zero report lowers the
    // horizon below its own age, so only ever-fresher routes are still predicted.
    const convos = [chain(2, 4), chain(3, 4), chain(4, 4)];
    convos.forEach((keys, i) => index.learn(keys, "a", "LOCAL", [40_000, 70_000, 95_000][i]!));
    index.learn(chain(9, 2), "a", "LOCAL", 99_000);
    let cleared = 0;
    convos.forEach((keys, i) => {
      const v = view(keys);
      const now = 101_000 + i;
      const snap = truth.dispatch(v, decide(index, v, "a", now), now);
      assert.equal(snap.predictedBlocks, 4);
      if (truth.report(snap, { cachedTokens: 0, promptTokens: v.inputTokens }, now + 100).cleared) cleared++;
    });
    assert.equal(cleared, 1);
    assert.equal(index.replicaView("a").routes, 0);
    assert.equal(index.replicaView("a").horizonMs, null, "a cleared replica starts without a horizon");
    assert.equal(truth.state("a", 3_000).lastClearReason, "cache-lost");
  });

  it("zero-cached reports on hits only the policy's own state predicted do not clear the replica", () => {
    const { index, truth } = setup();
    const convos = [chain(21, 4), chain(22, 4), chain(23, 4)];
    for (const keys of convos) index.learn(keys, "a", "LOCAL", 0);
    index.setReplicaHorizon("a", 60_000); // the index has written them off by 300 s
    const recent = chain(29, 4);
    index.learn(recent, "a", "LOCAL", 290_000);
    convos.forEach((keys, i) => {
      const now = 300_000 + i;
      // A peer policy (SGLang's tree never forgets) credits the replica with the whole prompt.
      const decision: Decision = { choice: "a", scores: [{ id: "a", score: 0, matchedBlocks: 4 }], predictedCachedTokens: 4 * TPB };
      const out = truth.report(truth.dispatch(view(keys), decision, now), { cachedTokens: 0, promptTokens: 4 * TPB }, now + 100);
      assert.equal(out.feedback.verdict, "as-predicted", "the index predicted no hit");
    });
    const state = truth.state("a", 301_000);
    assert.equal(state.clears, 0, `cleared as ${state.lastClearReason}`);
    assert.equal(index.match(recent, 301_000, ["a"]).depthByReplica.get("a"), 4);
    assert.deepEqual([state.predictedTokens, state.accuracy], [3 * 4 * TPB, 0], "the accuracy window measures the decisions");
  });

  it("zero-cached reports within the rounding slack (one predicted block, page alignment) do not clear the replica", () => {
    const { index, truth } = setup();
    const tpb = 16; // chat blocks of ~16 estimated tokens: the engine's counts differ, one block of slack
    const convo = traceBlockKeys([11, ...Array.from({ length: 30 }, (_, i) => 1_000 + i)]);
    index.learn(convo, "a", "LOCAL", 1_000); // a long conversation the engine still holds
    let cleared = false;
    for (let i = 0; i < 4; i++) {
      const keys = traceBlockKeys([11, 2_000 + i * 10, 2_001 + i * 10]); // shares only the system prompt's block
      const v: RequestView = { keys, inputTokens: 40, tokensPerBlock: tpb, sessionKey: `s${i}`, clientRegion: "us" };
      const now = 10_000 + i * 1_000;
      const decision: Decision = { choice: "a", scores: [{ id: "a", score: 0, matchedBlocks: 1 }], predictedCachedTokens: tpb };
      const snap = truth.dispatch(v, decision, now);
      index.learn(keys, "a", "LOCAL", now + 50);
      const out = truth.report(snap, { cachedTokens: 0, promptTokens: 52 }, now + 500);
      assert.equal(out.feedback.verdict, "as-predicted");
      cleared ||= out.cleared;
    }
    assert.equal(cleared, false, "cleared as cache-lost");
    assert.equal(truth.state("a", 14_000).clears, 0);
    assert.equal(index.match(convo, 14_000, ["a"]).depthByReplica.get("a"), convo.length);
  });

  it("sizes a replica's part of the index from its KV capacity, the operator's override first", () => {
    const { index, truth } = setup();
    truth.engineMetrics("a", { capacityTokens: 10 * TPB, epoch: null }, TPB, 0);
    assert.equal(index.replicaView("a").budget, 10);
    assert.equal(truth.state("a", 0).capacitySource, "metrics");
    truth.setCapacityOverride("a", 3 * TPB, TPB);
    assert.equal(index.replicaView("a").budget, 3);
    truth.engineMetrics("a", { capacityTokens: 20 * TPB, epoch: null }, TPB, 1);
    assert.equal(index.replicaView("a").budget, 3, "the override wins over later scrapes");
    assert.deepEqual([truth.state("a", 1).capacityTokens, truth.state("a", 1).capacitySource], [3 * TPB, "override"]);
    truth.setCapacityOverride("a", null, TPB);
    assert.equal(index.replicaView("a").budget, 20);
    index.learn(chain(5, 30), "a", "LOCAL", 2);
    assert.equal(index.replicaView("a").routes, 20);
    assert.throws(() => truth.setCapacityOverride("a", -1, TPB), /capacityTokens/);
  });

  it("an estimated capacity never shrinks within one engine process; a restart or a stated pool replaces it", () => {
    const { index, truth } = setup();
    const epoch = (prompt: number) => ({ startTimeSec: null, counters: { prompt_tokens_total: prompt } });
    const estimate = (tokens: number | null, prompt: number) => ({ capacityTokens: tokens, capacityEstimated: true, epoch: epoch(prompt) });
    truth.engineMetrics("a", estimate(100 * TPB, 10), TPB, 0);
    index.learn(chain(7, 100), "a", "LOCAL", 1);
    truth.engineMetrics("a", estimate(96 * TPB, 20), TPB, 2); // the rounded usage read high: a lower estimate
    truth.engineMetrics("a", estimate(null, 30), TPB, 3); // usage too low to estimate
    assert.equal(index.replicaView("a").budget, 100);
    assert.equal(index.replicaView("a").routes, 100, "routes the engine holds were evicted by a noisy reading");
    truth.engineMetrics("a", estimate(104 * TPB, 40), TPB, 4);
    assert.equal(index.replicaView("a").budget, 104, "a larger estimate raises it");
    truth.engineMetrics("a", estimate(90 * TPB, 5), TPB, 5); // the counter went back: a new process
    assert.equal(index.replicaView("a").budget, 90);
    truth.engineMetrics("a", { capacityTokens: 80 * TPB, epoch: epoch(50) }, TPB, 6); // the engine states its pool
    assert.equal(index.replicaView("a").budget, 80);
  });

  it("tracks accuracy over its window and says when a replica reports no cached tokens at all", () => {
    const { index, truth } = setup();
    const keys = chain(6, 4);
    index.learn(keys, "a", "LOCAL", 0);
    assert.equal(truth.state("a", 0).cachedTokensReported, null);
    for (let i = 0; i < 3; i++) {
      const v = view(keys);
      truth.report(truth.dispatch(v, decide(index, v, "a", 10 + i), 10 + i), { cachedTokens: undefined }, 20 + i);
    }
    let s = truth.state("a", 30);
    assert.deepEqual([s.cachedTokensReported, s.unreported, s.reports, s.accuracy], [false, 3, 0, null]);
    const v = view(keys);
    truth.report(truth.dispatch(v, decide(index, v, "a", 40), 40), { cachedTokens: 4 * TPB, promptTokens: 4 * TPB }, 50);
    s = truth.state("a", 60);
    assert.deepEqual([s.cachedTokensReported, s.reports, s.accuracy], [true, 1, 1]);
  });
});
