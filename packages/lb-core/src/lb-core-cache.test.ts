// The LB core's cache model end to end: what the index learns from the engines' cached-token reports,
// their metrics (KV capacity, restarts) and the operator's override, as the proxy and the simulator
// drive it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { traceBlockKeys } from "@meridian/routing";
import type { LbConfigInput } from "@meridian/protocol";
import type { Outcome } from "./completion";
import type { LbCore, CacheModel } from "./lb-core";
import { testCore } from "./test-helpers";

const TPB = 512;
const keys = traceBlockKeys(Array.from({ length: 10 }, (_, i) => 7_000 + i));
const replica = (id: string, extra: Record<string, unknown> = {}) => ({ id, url: `http://${id}.test/`, region: "us", model: "m", ...extra });

const core = (extra: Partial<LbConfigInput> = {}, cacheModel: CacheModel = "learned") =>
  testCore({ policy: "prefix-cache", replicas: [replica("a")], ...extra }, { cacheModel });

const served = (cachedTokens: unknown): Outcome => ({
  status: 200,
  error: null,
  usage: { promptTokens: keys.length * TPB, completionTokens: 1, cachedTokens: cachedTokens as number | null },
  reply: "",
  outputEvents: 1,
  ttftMs: 5,
  e2eMs: 9,
});

/** A trace request dispatched at `at` and completed at `at + 500` with the given usage. */
function request(lb: LbCore<string>, at: number, cachedTokens: unknown) {
  const ticket = lb.admit("r", { keys, sessionKey: "s", model: null, hop: 0, inputTokens: keys.length * TPB, tokensPerBlock: TPB }, at);
  lb.route(ticket, at);
  const predicted = ticket.target!.predictedCachedTokens;
  const done = lb.complete(ticket, served(cachedTokens), at + 500);
  return { predicted, done };
}

const depthOn = (lb: LbCore<string>, id: string, now: number) => lb.index.match(keys, now, [id]).depthByReplica.get(id);

describe("LB core cache model", () => {
  it("a reported cached count lower than the prediction trims the replica's routes", () => {
    const lb = core();
    lb.learn({ index: "local", keys, targetId: "a" }, 0);
    const { predicted, done } = request(lb, 60_000, 3 * TPB);
    assert.equal(predicted, 10 * TPB);
    assert.equal(done.cacheReport?.feedback.verdict, "lower");
    assert.equal(depthOn(lb, "a", 61_000), 3);
    assert.equal(lb.truth.state("a", 61_000).accuracy, 0.3);
  });

  it("a reported cached count higher than the prediction extends them", () => {
    const lb = core();
    lb.learn({ index: "local", keys: keys.slice(0, 2), targetId: "a" }, 0);
    const { predicted, done } = request(lb, 1_000, 8 * TPB);
    assert.equal(predicted, 2 * TPB);
    assert.equal(done.cacheReport?.feedback.verdict, "higher");
    assert.equal(depthOn(lb, "a", 2_000), 8);
  });

  it("bad or missing usage fields change nothing and raise nothing", () => {
    for (const bad of [null, undefined, Number.NaN, -1, "512", {}]) {
      const lb = core();
      lb.learn({ index: "local", keys, targetId: "a" }, 0);
      const before = JSON.stringify(keys.map((k) => lb.index.routesOf(k)));
      const { done } = request(lb, 1_000, bad);
      assert.equal(done.cacheReport?.feedback.verdict, "unreported", String(bad));
      assert.equal(JSON.stringify(keys.map((k) => lb.index.routesOf(k))), before);
      assert.equal(lb.truth.state("a", 2_000).cachedTokensReported, false);
    }
  });

  it("an engine restart seen in a scrape clears that replica's entries", () => {
    const lb = core({ replicas: [replica("a"), replica("b")] });
    lb.learn({ index: "local", keys, targetId: "a" }, 0);
    lb.learn({ index: "local", keys, targetId: "b" }, 0);
    const load = { running: 0, waiting: 0, usedTokens: 0 };
    const epoch = (prompt: number, start: number) => ({ startTimeSec: start, counters: { prompt_tokens_total: prompt } });
    assert.equal(lb.scrapeSucceeded("a", load, 10, { capacityTokens: null, epoch: epoch(5_000, 100) }), false);
    assert.equal(lb.scrapeSucceeded("a", load, 20, { capacityTokens: null, epoch: epoch(9_000, 100) }), false);
    assert.equal(lb.scrapeSucceeded("a", load, 30, { capacityTokens: null, epoch: epoch(10, 900) }), true);
    assert.equal(depthOn(lb, "a", 31), 0);
    assert.equal(depthOn(lb, "b", 31), 10);
    assert.equal(lb.state(31, { startedAt: 0, telemetry: { lastSeq: 0, bufferSize: 0 } }).replicas[0]!.cache.lastClearReason, "engine-restart");
  });

  it("sizes each replica from its engine's KV capacity, the operator's override first", () => {
    const lb = core({ replicas: [replica("a"), replica("b", { cacheCapacityTokens: 4 * TPB })] });
    // The first admit tells the core what one key stands for (the trace's block size).
    lb.admit("r", { keys, sessionKey: "s", model: null, hop: 0, inputTokens: 10 * TPB, tokensPerBlock: TPB }, 0);
    lb.scrapeSucceeded("a", { running: 0, waiting: 0, usedTokens: 0 }, 1, { capacityTokens: 6 * TPB, epoch: null });
    lb.scrapeSucceeded("b", { running: 0, waiting: 0, usedTokens: 0 }, 1, { capacityTokens: 6 * TPB, epoch: null });
    assert.equal(lb.index.replicaView("a").budget, 6);
    assert.equal(lb.index.replicaView("b").budget, 4);
    lb.learn({ index: "local", keys, targetId: "b" }, 2);
    assert.equal(depthOn(lb, "b", 3), 4, "the index keeps what the engine can hold");
  });

  it("the static model learns nothing from reports and metrics (the yardstick)", () => {
    const lb = core({}, "static");
    lb.learn({ index: "local", keys, targetId: "a" }, 0);
    const { done } = request(lb, 60_000, 0);
    assert.equal(done.cacheReport, null);
    lb.scrapeSucceeded("a", { running: 0, waiting: 0, usedTokens: 0 }, 1, { capacityTokens: TPB, epoch: null });
    assert.equal(lb.index.replicaView("a").budget, null);
    assert.equal(depthOn(lb, "a", 61_000), 10);
  });
});

/** Serves `keys` on replica a as a live LB does: dispatch at `at`, the first byte's learn at at+100,
 * completion at at+500 with the engine's usage (`cached` of the prompt's tokens). */
function serve(lb: LbCore<string>, keys: readonly number[], size: { inputTokens: number; tokensPerBlock: number }, at: number, cached: number) {
  const ticket = lb.admit("r", { keys, sessionKey: `s${keys[0]}`, model: null, hop: 0, ...size }, at);
  assert.equal(lb.route(ticket, at).kind, "replica");
  const first = lb.headersReceived(ticket, 200, at + 100);
  if (first) lb.learn(first, at + 100);
  const usage = { status: 200, error: null, usage: { promptTokens: size.inputTokens, completionTokens: 1, cachedTokens: cached } };
  const done = lb.complete(ticket, { ...usage, reply: "", outputEvents: 1, ttftMs: 1, e2eMs: 2 }, at + 500);
  if (done.learn) lb.learn(done.learn, at + 500);
  return { ticket, done };
}

describe("token-id prompts: a full hit is no lost block", () => {
  // The proxy admits a token-id prompt (/v1/completions with prompt: [ids], as lm-evaluation-harness
  // sends) sized in tokens, 16 ids a key (embedding-input.ts). vLLM never reports the prompt's last
  // token as cached: a full hit on 16-token pages reports the pages before it.
  const vllmCached = (held: number, prompt: number) => Math.min(held, Math.floor((prompt - 1) / 16) * 16);
  const ids = (root: number, n: number) => traceBlockKeys(Array.from({ length: n }, (_, i) => root * 100 + i));
  const size = (keys: readonly number[]) => ({ inputTokens: keys.length * 16, tokensPerBlock: 16 });

  it("a repeated 64-id prompt the engine holds whole is judged as predicted", () => {
    const lb = core({ policy: "gorgo" });
    const p = ids(1, 4);
    serve(lb, p, size(p), 1_000_000, 0);
    const again = serve(lb, p, size(p), 1_010_000, vllmCached(64, 64)); // reports 48
    assert.equal(again.ticket.target?.predictedCachedTokens, 64);
    assert.equal(again.done.cacheReport?.feedback.verdict, "as-predicted");
    assert.equal(again.done.cacheReport?.feedback.trimmed, 0);
  });

  it("a full hit does not clear the replica as cache-lost", () => {
    const lb = core({ policy: "gorgo" });
    const other = ids(2, 4); // another client's prompt, served long ago, still within the TTL
    serve(lb, other, size(other), 0, 0);
    const p = ids(3, 4);
    serve(lb, p, size(p), 1_000_000, 0);
    const head = p.slice(0, 3); // p's first 48 ids, re-learned 10 s later
    serve(lb, head, size(head), 1_010_000, vllmCached(48, 48));
    const third = serve(lb, p, size(p), 1_020_000, vllmCached(64, 64)); // the engine still holds all of p
    const state = lb.truth.state("a", 1_021_000);
    assert.equal(third.done.cacheReport?.cleared, false, `cleared as ${state.lastClearReason}`);
    assert.equal(state.clears, 0);
    assert.equal(lb.index.match(other, 1_021_000, ["a"]).depthByReplica.get("a"), 4, "nothing said the other prompt was lost");
  });
});

describe("under a peer policy, reports are judged against the LB's own index", () => {
  it("misses only the policy's own state predicted do not clear the replica; its accuracy still measures the policy", () => {
    const lb = core({ policy: "sglang-cache-aware" });
    const size = { inputTokens: 10 * TPB, tokensPerBlock: TPB };
    const convo = (root: number) => traceBlockKeys(Array.from({ length: 10 }, (_, i) => root * 1_000 + i));
    for (const root of [1, 2, 3]) serve(lb, convo(root), size, 0, 0);
    lb.index.setReplicaHorizon("a", 60_000); // what the index learned: replica a keeps blocks about a minute
    const recent = convo(9);
    serve(lb, recent, size, 290_000, 0); // the engine holds it
    // Five minutes on, the three conversations come back: the engine evicted them long ago. SGLang's
    // tree never learns of an eviction and predicts them whole; the LB's index, past its horizon, does not.
    let policyPredicted = 0;
    for (const root of [1, 2, 3]) {
      const { ticket } = serve(lb, convo(root), size, 300_000 + root, 0);
      assert.equal(ticket.target?.predictedCachedTokens, 10 * TPB, "sglang's own tree predicts a hit");
      policyPredicted += ticket.target?.predictedCachedTokens ?? 0;
    }
    const state = lb.truth.state("a", 301_000);
    assert.equal(state.clears, 0, `replica a cleared as ${state.lastClearReason}`);
    assert.equal(lb.index.match(recent, 301_000, ["a"]).depthByReplica.get("a"), 10, "the recent conversation is still held");
    assert.deepEqual([state.predictedTokens, state.accuracy], [policyPredicted, 0], "the accuracy figures measure the policy's predictions");
  });
});
