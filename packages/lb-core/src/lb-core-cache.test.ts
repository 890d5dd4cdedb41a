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
