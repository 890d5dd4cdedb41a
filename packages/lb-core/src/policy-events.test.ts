// The core tells a policy with its own state (the peer routers) of every dispatch, its first 2xx
// bytes and its end, once each, so the proxy and the simulator teach it identically; and it books
// what each dispatch charges its replica (in-flight prompt tokens until the end, uncached prefill
// until the first byte) and what the replica's view shows.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { chatBlockKeys, type PolicyEvent } from "@meridian/routing";
import type { LbConfigInput } from "@meridian/protocol";
import type { Outcome } from "./completion";
import type { LbCore } from "./lb-core";
import { testCore } from "./test-helpers";

const replica = (id: string, extra: Record<string, unknown> = {}) => ({ id, url: `http://${id}.test/`, region: "us", model: "m", ...extra });

const core = (extra: Partial<LbConfigInput> = {}): LbCore<string> => testCore({ policy: "dynamo-kv", ...extra });

/** Records the events the core sends to its current policy (they still reach the policy). */
function recordEvents(lb: LbCore<string>): PolicyEvent[] {
  const policy = lb["policy"];
  const events: PolicyEvent[] = [];
  const inner = policy.observe?.bind(policy);
  policy.observe = (event) => {
    events.push(event);
    inner?.(event);
  };
  return events;
}

const summary = (events: readonly PolicyEvent[]) =>
  events.map((e) =>
    e.kind === "replica-removed" ? `${e.kind}:${e.replicaId}` : `${e.kind}:${e.requestId}${e.kind === "dispatch" ? `@${e.replicaId}` : ""}@${e.now}`,
  );

// 300 characters: 75 estimated tokens (4 characters a token), a chat block of 64 characters is 16.
const keys = chatBlockKeys([{ role: "user", content: "x".repeat(300) }]);
const input = (session: string) => ({ keys, sessionKey: session, model: null, hop: 0, promptChars: 300 });
const served: Outcome = { status: 200, error: null, usage: null, reply: "", outputEvents: 1, ttftMs: 1, e2eMs: 2 };

describe("policy events", () => {
  it("a served request: dispatch, first-token and complete, once each, under one id and the times given", () => {
    const lb = core();
    const events = recordEvents(lb);
    const ticket = lb.admit("r", input("s"), 10);
    const placement = lb.route(ticket, 10);
    assert.equal(placement.kind, "replica");
    lb.headersReceived(ticket, 200, 20);
    lb.headersReceived(ticket, 200, 21); // a second call (a peer's headers, say) is not a second first token
    lb.complete(ticket, served, 30);
    lb.complete(ticket, served, 31);
    const target = placement.kind === "replica" ? placement.replicaId : "";
    assert.deepEqual(summary(events), [`dispatch:1@${target}@10`, "first-token:1@20", "complete:1@30"]);
    const dispatch = events[0] as Extract<PolicyEvent, { kind: "dispatch" }>;
    assert.equal(dispatch.request, ticket.view);
    assert.equal(dispatch.decision.choice, target);
  });

  it("a retry is a new dispatch with a new id; the failed one is completed first and never had a first token", () => {
    const lb = core();
    const events = recordEvents(lb);
    const ticket = lb.admit("r", input("s"), 0);
    const first = lb.route(ticket, 0);
    const second = lb.retry(ticket, 5);
    assert.ok(first.kind === "replica" && second.kind === "replica");
    assert.notEqual(first.replicaId, second.replicaId);
    lb.headersReceived(ticket, 200, 7);
    lb.complete(ticket, served, 9);
    assert.deepEqual(summary(events), [
      `dispatch:1@${first.replicaId}@0`,
      "complete:1@5",
      `dispatch:2@${second.replicaId}@5`,
      "first-token:2@7",
      "complete:2@9",
    ]);
  });

  it("an error response gets no first token, only its end; a refused or cancelled request tells the policy nothing", () => {
    const lb = core({ limits: { queueMaxLength: 4, queueMaxWaitMs: 100 } });
    const events = recordEvents(lb);
    const errored = lb.admit("r", input("s"), 0);
    lb.route(errored, 0);
    lb.headersReceived(errored, 400, 1);
    lb.complete(errored, { ...served, status: 400 }, 2);
    assert.deepEqual(
      summary(events).map((e) => e.split("@")[0]),
      ["dispatch:1", "complete:1"],
    );
    for (const id of ["a", "b"]) lb.scrapeSucceeded(id, { running: 1, waiting: 1, usedTokens: 0 }, 3);
    const cancelled = lb.admit("c", input("c"), 3);
    assert.equal(lb.route(cancelled, 3).kind, "hold");
    assert.equal(lb.cancel(cancelled), true);
    const expired = lb.admit("e", input("e"), 3);
    assert.equal(lb.route(expired, 3).kind, "hold");
    assert.equal(lb.drain(200)[0]?.placement.kind, "fail");
    assert.equal(events.length, 2);
  });

  it("a held request is dispatched (and told) when the queue drains, at the drain's time", () => {
    const lb = core();
    const events = recordEvents(lb);
    for (const id of ["a", "b"]) lb.scrapeSucceeded(id, { running: 1, waiting: 1, usedTokens: 0 }, 0);
    const held = lb.admit("h", input("h"), 0);
    assert.equal(lb.route(held, 0).kind, "hold");
    assert.equal(events.length, 0);
    lb.scrapeSucceeded("a", { running: 1, waiting: 0, usedTokens: 0 }, 50);
    assert.equal(lb.drain(50)[0]?.placement.kind, "replica");
    assert.deepEqual(summary(events), ["dispatch:1@a@50"]);
  });

  it("after a config push that changes the policy, in-flight requests still end at the policy that placed them", () => {
    const lb = core();
    const before = recordEvents(lb);
    const ticket = lb.admit("r", input("s"), 0);
    lb.route(ticket, 0);
    lb.applyConfig({ ...lb.config, version: 2, policy: "sglang-cache-aware" });
    const after = recordEvents(lb);
    lb.headersReceived(ticket, 200, 1);
    lb.complete(ticket, served, 2);
    assert.deepEqual(
      summary(before).map((e) => e.split("@")[0]),
      ["dispatch:1", "first-token:1", "complete:1"],
    );
    assert.deepEqual(after, []);
  });

  it("a policy without state is told nothing, and a forward to a peer LB is not a dispatch", () => {
    const lb = core({ policy: "gorgo" });
    const ticket = lb.admit("r", input("s"), 0);
    lb.route(ticket, 0);
    assert.equal(ticket.target?.observedId, null);
    lb.complete(ticket, served, 1);
    assert.equal(lb.replicas.get(ticket.target!.id)!.inFlight, 0);
  });
});

describe("what a dispatch charges its replica", () => {
  it("prompt tokens until the end; uncached prefill (prompt minus predicted cached) until the first byte", () => {
    const lb = core({ policy: "least-request" });
    // Replica a holds the prompt's first 3 blocks: 48 of its 75 tokens predicted cached.
    lb.learn({ index: "local", keys: keys.slice(0, 3), targetId: "a" }, 0);
    lb.scrapeSucceeded("b", { running: 9, waiting: 0, usedTokens: 0 }, 0);
    const ticket = lb.admit("r", input("s"), 0);
    const placement = lb.route(ticket, 0);
    assert.ok(placement.kind === "replica" && placement.replicaId === "a");
    assert.equal(placement.decision.predictedCachedTokens, 48);
    const a = lb.replicas.get("a")!;
    const view = () => a.candidateView(0, lb.config.probes);
    assert.deepEqual([view().inFlight, view().queuedTokens, view().pendingPrefillTokens], [1, 75, 27]);
    lb.headersReceived(ticket, 200, 1);
    assert.deepEqual([view().inFlight, view().queuedTokens, view().pendingPrefillTokens], [1, 75, 0]);
    lb.complete(ticket, served, 2);
    assert.deepEqual([view().inFlight, view().queuedTokens, view().pendingPrefillTokens], [0, 0, 0]);
  });

  it("a retry releases everything on the failed replica, and a failure before any byte releases the prefill too", () => {
    const lb = core({ policy: "least-request" });
    const ticket = lb.admit("r", input("s"), 0);
    const first = lb.route(ticket, 0);
    assert.equal(first.kind, "replica");
    const firstReplica = lb.replicas.get(ticket.target!.id)!;
    assert.equal(firstReplica.pendingPrefillTokens, 75);
    lb.retry(ticket, 1);
    const secondReplica = lb.replicas.get(ticket.target!.id)!;
    assert.notEqual(secondReplica, firstReplica);
    assert.deepEqual([firstReplica.inFlight, firstReplica.queuedTokens, firstReplica.pendingPrefillTokens], [0, 0, 0]);
    assert.deepEqual([secondReplica.inFlight, secondReplica.queuedTokens, secondReplica.pendingPrefillTokens], [1, 75, 75]);
    lb.complete(ticket, { ...served, status: 502 }, 2);
    assert.deepEqual([secondReplica.inFlight, secondReplica.queuedTokens, secondReplica.pendingPrefillTokens], [0, 0, 0]);
  });

  it("peers report both loads and the view adds them to this LB's", () => {
    const lb = core({ policy: "least-request", peers: [{ id: "lb-eu", url: "http://lb-eu.test/", region: "eu" }] });
    const ticket = lb.admit("r", input("s"), 0);
    lb.route(ticket, 0);
    const id = ticket.target!.id;
    const report = lb.peerReport(0, 0);
    assert.deepEqual(
      report.replicas.find((r) => r.id === id),
      { id, inFlight: 1, inFlightTokens: 75, pendingPrefillTokens: 75, full: false },
    );
    const peerLoad = { id, inFlight: 2, inFlightTokens: 500, pendingPrefillTokens: 200, full: false };
    lb.peerReported("lb-eu", { ...report, lbId: "lb-eu", region: "eu", replicas: [peerLoad] }, 10, 0);
    const view = lb.replicas.get(id)!.candidateView(0, lb.config.probes);
    assert.deepEqual([view.queuedTokens, view.pendingPrefillTokens], [575, 275]);
    // A stale report counts no more.
    lb.peerReported("lb-eu", { ...report, lbId: "lb-eu", region: "eu", replicas: [] }, 10, 1);
    assert.equal(lb.replicas.get(id)!.candidateView(1, lb.config.probes).pendingPrefillTokens, 75);
  });

  it("the view's KV capacity is the config's override, else what the engine's scrape reports; 0 or unknown is absent", () => {
    const lb = core({ replicas: [replica("a", { cacheCapacityTokens: 50_000 }), replica("b"), replica("c", { cacheCapacityTokens: 0 })] });
    const load = { running: 0, waiting: 0, usedTokens: 0 };
    const scraped = (id: string, capacityTokens: number | null) => lb.scrapeSucceeded(id, load, 0, { capacityTokens, epoch: null });
    for (const id of ["a", "b", "c"]) scraped(id, 200_000);
    const capacity = (id: string) => lb.replicas.get(id)!.candidateView(0, lb.config.probes).kvCapacityTokens;
    assert.equal(capacity("a"), 50_000);
    assert.equal(capacity("b"), 200_000);
    assert.equal(capacity("c"), undefined);
    scraped("b", null);
    assert.equal(capacity("b"), undefined);
  });
});
