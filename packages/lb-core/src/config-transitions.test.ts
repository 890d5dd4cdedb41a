// A config pushed while requests are in flight or held: an admitted request is not refused for a
// limit lowered since, a request placed by a policy switched to while it waited reports that policy,
// and a replica re-pointed to a new URL is another target than the one a request was booked on.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { chatBlockKeys, traceBlockKeys } from "@meridian/routing";
import { parseLbConfig, type LbConfigInput } from "@meridian/protocol";
import type { Outcome } from "./completion";
import { testCore } from "./test-helpers";

const replica = (id: string, extra: Record<string, unknown> = {}) => ({ id, url: `http://${id}.test/`, region: "us", model: "m", ...extra });
const base: LbConfigInput = {
  schema: "meridian.lb-config/1",
  version: 1,
  lbId: "lb-us",
  region: "us",
  policy: "least-request",
  replicas: [replica("a"), replica("b")],
};
// About 1,000 tokens at the estimator's initial 4 characters a token.
const keys = chatBlockKeys([{ role: "user", content: "x".repeat(4_000) }]);
const input = (session: string) => ({ keys, sessionKey: session, model: null, hop: 0, promptChars: 4_000 });
const served: Outcome = { status: 200, error: null, usage: null, reply: "", outputEvents: 1, ttftMs: 1, e2eMs: 2 };

const core = (extra: Partial<LbConfigInput> = {}) => testCore({ ...base, ...extra });

describe("a config pushed under load", () => {
  it("a request admitted under the old prompt limit that fails over is retried, not refused as too long", () => {
    const lb = core();
    const ticket = lb.admit("r", input("s"), 0);
    assert.equal(lb.route(ticket, 0).kind, "replica");
    lb.applyConfig(parseLbConfig({ ...base, version: 2, limits: { maxPromptTokens: 100 } }));
    // Its replica answers 502 before any byte: the other replica takes it.
    assert.equal(lb.retry(ticket, 10).kind, "replica");
    // A new request over the new limit is refused at once.
    const fresh = lb.route(lb.admit("n", input("n"), 11), 11);
    assert.ok(fresh.kind === "fail" && fresh.failure.code === "context_length_exceeded");
  });

  it("a request held across a policy switch reports the policy that placed it", () => {
    const trial = { id: "t1", salt: "s", share: 0.5, candidate: { rtt: 5, queue: 0.05 } };
    const full = [replica("a", { maxConcurrency: 1 }), replica("b", { maxConcurrency: 1 })];
    const lb = core({ policy: "gorgo", trial, replicas: full });
    const busy = [lb.admit("x", input("sx"), 0), lb.admit("y", input("sy"), 0)];
    for (const ticket of busy) lb.route(ticket, 0);
    const held = lb.admit("h", input("sh"), 0);
    assert.equal(lb.route(held, 0).kind, "hold");
    lb.applyConfig(parseLbConfig({ ...base, version: 2, policy: "round-robin", replicas: full }));
    lb.complete(busy[0]!, served, 5);
    assert.equal(lb.drain(5)[0]?.placement.kind, "replica");
    const event = lb.complete(held, served, 9).telemetry();
    assert.equal(event.policy, "round-robin");
    assert.equal(event.configVersion, 1, "still the version it arrived under");
  });

  it("a replica re-pointed to a new URL is not the target its earlier requests were booked on", () => {
    const lb = core({ replicas: [replica("a")] });
    const ticket = lb.admit("r", input("s"), 0);
    assert.equal(lb.route(ticket, 0).kind, "replica");
    assert.equal(lb.onCurrentTarget(ticket), true);
    lb.applyConfig(parseLbConfig({ ...base, version: 2, replicas: [{ ...replica("a"), url: "http://a-new.test/" }] }));
    lb.probeSucceeded("a", 1);
    assert.equal(lb.onCurrentTarget(ticket), false);
    // The old URL reset the connection: the engine now at the new URL takes the retry.
    const retried = lb.retry(ticket, 10);
    assert.ok(retried.kind === "replica" && retried.replicaId === "a");
    assert.equal(lb.onCurrentTarget(ticket), true);
  });

  for (const policy of ["sglang-cache-aware", "llm-d", "dynamo-kv"] as const) {
    it(`${policy}: a replica re-pointed to a new engine is not credited with the old engine's prefixes`, () => {
      const shared = chatBlockKeys([{ role: "user", content: "shared system prompt ".repeat(100) }]);
      const ask = (session: string) => ({ keys: shared, sessionKey: session, model: null, hop: 0, promptChars: 2_100 });
      const lb = core({ policy });
      const first = lb.admit("r", ask("s1"), 0);
      const placed = lb.route(first, 0);
      assert.equal(placed.kind, "replica");
      const chosen = placed.kind === "replica" ? placed.replicaId : "";
      lb.complete(first, served, 1);
      const again = lb.route(lb.admit("r2", ask("s2"), 2), 2);
      assert.ok(again.kind === "replica" && again.decision.predictedCachedTokens > 0, "the policy learned the prefix");
      const repointed = (base.replicas ?? []).map((r) => (r.id === chosen ? { ...r, url: `http://${chosen}-new.test/` } : r));
      lb.applyConfig(parseLbConfig({ ...base, policy, version: 2, replicas: repointed }));
      lb.probeSucceeded(chosen, 1);
      const after = lb.route(lb.admit("r3", ask("s3"), 10), 10);
      assert.ok(after.kind === "replica");
      const credited = after.decision.scores.find((score) => score.id === chosen)?.matchedBlocks ?? 0;
      assert.equal(credited, 0, `${chosen}, now a new engine, is believed to hold ${credited} blocks`);
    });
  }

  it("dynamo-kv: a re-pointed replica, a new idle engine, is not charged the old engine's requests still in flight", () => {
    const lb = core({ policy: "dynamo-kv" });
    // A long request in flight on whichever replica takes it; it does not end during the test.
    const long = { ...input("s1"), keys: chatBlockKeys([{ role: "user", content: "long prompt ".repeat(2_000) }]), promptChars: 24_000 };
    const busy = lb.route(lb.admit("busy", long, 0), 0);
    assert.equal(busy.kind, "replica");
    const chosen = busy.kind === "replica" ? busy.replicaId : "";
    const other = chosen === "a" ? "b" : "a";
    const repointed = (base.replicas ?? []).map((r) => (r.id === chosen ? { ...r, url: `http://${chosen}-new.test/` } : r));
    lb.applyConfig(parseLbConfig({ ...base, policy: "dynamo-kv", version: 2, replicas: repointed }));
    lb.probeSucceeded(chosen, 1);
    const next = lb.route(lb.admit("n", input("s2"), 10), 10);
    assert.ok(next.kind === "replica");
    const cost = (id: string) => next.decision.scores.find((score) => score.id === id)?.score;
    assert.equal(cost(chosen), cost(other), `the new idle engine ${chosen} costs ${cost(chosen)}, the idle ${other} ${cost(other)}`);
  });

  it("a new index size or TTL keeps each replica's budget from its engine's metrics", () => {
    const lb = core({ policy: "prefix-cache" });
    const tpb = 512;
    // A trace request sets the LB's block size to 512 tokens; the engine's KV pool holds 4 blocks.
    const trace = traceBlockKeys(Array.from({ length: 8 }, (_, i) => 100 + i));
    lb.route(lb.admit("r", { keys: trace, sessionKey: "s", model: null, hop: 0, inputTokens: 8 * tpb, tokensPerBlock: tpb }, 0), 0);
    lb.scrapeSucceeded("a", { running: 0, waiting: 0, usedTokens: 0 }, 10, { capacityTokens: 4 * tpb, epoch: { startTimeSec: 100, counters: {} } });
    lb.applyConfig(parseLbConfig({ ...base, policy: "prefix-cache", version: 2, index: { ttlMs: 600_000 } }));
    assert.equal(lb.truth.state("a", 20).budgetBlocks, 4, "budget forgotten until the next scrape");
    lb.learn({ index: "local", keys: trace, targetId: "a" }, 30);
    assert.equal(lb.index.match(trace, 40, ["a"]).depthByReplica.get("a"), 4, "the index credits the replica with more than its engine holds");
  });
});
