import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { chatBlockKeys } from "@meridian/routing";
import { parseLbConfig, type LbConfigInput } from "@meridian/protocol";
import type { PlacementLogEntry } from "./placement";
import { nextRttEwma, RTT_EWMA_ALPHA } from "./rtt";
import { testCore } from "./test-helpers";
import type { Outcome } from "./completion";
import type { PeerReportBody } from "./targets";

const replica = (id: string, region = "us", extra: Record<string, unknown> = {}) => ({ id, url: `http://${id}.test/`, region, model: "m", ...extra });

const core = (extra: Partial<LbConfigInput> = {}, log: PlacementLogEntry[] = []) => testCore(extra, { onPlacement: (e) => log.push(e) });

const keys = chatBlockKeys([{ role: "user", content: "x".repeat(300) }]);
const admitInput = (session: string, model: string | null = null) => ({ keys, sessionKey: session, model, hop: 0, promptChars: 300 });
const served = (reply = ""): Outcome => ({
  status: 200,
  error: null,
  usage: { promptTokens: 75, completionTokens: 3, cachedTokens: 0 },
  reply,
  outputEvents: 3,
  ttftMs: 5,
  e2eMs: 9,
});

describe("RTT estimate", () => {
  it("seeds with the first sample, then moves by alpha 0.3", () => {
    assert.equal(RTT_EWMA_ALPHA, 0.3);
    assert.equal(nextRttEwma(null, 100), 100);
    assert.equal(nextRttEwma(100, 200), 130);
  });
});

describe("replica knowledge", () => {
  it("admitted concurrency is the running count last seen while requests were waiting; scrapes go stale", () => {
    const lb = core();
    const a = lb.replicas.get("a")!;
    lb.scrapeSucceeded("a", { running: 5, waiting: 0, usedTokens: 0 }, 1_000);
    assert.equal(a.concurrencyCap(), null);
    lb.scrapeSucceeded("a", { running: 12, waiting: 3, usedTokens: 0 }, 2_000);
    assert.equal(a.concurrencyCap(), 12);
    lb.scrapeSucceeded("a", { running: 4, waiting: 0, usedTokens: 0 }, 3_000);
    assert.equal(a.concurrencyCap(), 12);
    const probes = lb.config.probes;
    assert.deepEqual(a.freshLoad(3_000 + probes.scrapeIntervalMs, probes), { running: 4, waiting: 0, usedTokens: 0 });
    assert.equal(a.freshLoad(3_000 + 4 * probes.scrapeIntervalMs, probes), null);
  });

  it("a limit learned on a transient climbs back while the LB holds the replica at it and nothing waits", () => {
    const lb = core();
    const a = lb.replicas.get("a")!;
    // A scrape caught 4 requests running and 2 waiting for the engine's next step: limit 4.
    lb.scrapeSucceeded("a", { running: 4, waiting: 2, usedTokens: 0 }, 1_000);
    assert.equal(a.concurrencyCap(), 4);
    // The LB holds the replica at 4 and the engine has room: the limit grows, scrape by scrape.
    const caps: (number | null)[] = [];
    for (let i = 1; i <= 12; i++) {
      a.inFlight = a.concurrencyCap()!;
      lb.scrapeSucceeded("a", { running: a.inFlight, waiting: 0, usedTokens: 0 }, 1_000 + i * 250);
      caps.push(a.concurrencyCap());
    }
    assert.deepEqual(caps, [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
    // Past what the engine admits, requests wait: the limit is what ran.
    lb.scrapeSucceeded("a", { running: 14, waiting: 2, usedTokens: 0 }, 5_000);
    assert.equal(a.concurrencyCap(), 14);
    // Not held at the limit: no evidence of room, no growth.
    a.inFlight = 3;
    lb.scrapeSucceeded("a", { running: 3, waiting: 0, usedTokens: 0 }, 5_250);
    assert.equal(a.concurrencyCap(), 14);
  });

  it("a run of failed probes takes a replica out; one good probe brings it back", () => {
    const lb = core({ probes: { unhealthyAfter: 2 } });
    assert.equal(lb.probeFailed("a"), null);
    assert.equal(lb.probeFailed("a"), "unhealthy");
    assert.equal(lb.replicas.get("a")!.routable(), false);
    assert.equal(lb.probeSucceeded("a", 3), "recovered");
    assert.equal(lb.markUnreachable("a"), true);
    assert.equal(lb.replicas.get("a")!.healthy, false);
  });
});

describe("placement", () => {
  it("direct mode holds when every replica is full and drains in FIFO order when one frees", () => {
    const log: PlacementLogEntry[] = [];
    const lb = core({ limits: { queueMaxLength: 1, queueMaxWaitMs: 1_000 } }, log);
    for (const id of ["a", "b"]) lb.scrapeSucceeded(id, { running: 1, waiting: 1, usedTokens: 0 }, 0);
    const first = lb.admit("r1", admitInput("s1"), 0);
    assert.equal(lb.route(first, 0).kind, "hold");
    const second = lb.admit("r2", admitInput("s2"), 0);
    const refused = lb.route(second, 0);
    assert.ok(refused.kind === "fail" && refused.failure.code === "queue_full" && refused.failure.status === 503);
    assert.equal(lb.nextExpiryAt(), 1_000);
    assert.deepEqual(lb.drain(10), []);
    lb.scrapeSucceeded("b", { running: 0, waiting: 0, usedTokens: 0 }, 20);
    const settled = lb.drain(20);
    assert.equal(settled.length, 1);
    assert.ok(settled[0]!.ticket === first && settled[0]!.placement.kind === "replica" && settled[0]!.placement.replicaId === "b");
    assert.deepEqual(
      log.map((e) => [e.session, e.outcome, e.target, e.code]),
      [
        ["s1", "hold", null, null],
        ["s2", "fail", null, "queue_full"],
        ["s1", "replica", "b", null],
      ],
    );
  });

  it("a held request for another model is placed once its replica frees, past a head that still waits", () => {
    const lb = core({ replicas: [replica("a", "us", { model: "m1" }), replica("b", "us", { model: "m2" })], limits: { queueMaxWaitMs: 30_000 } });
    for (const id of ["a", "b"]) lb.scrapeSucceeded(id, { running: 8, waiting: 4, usedTokens: 0 }, 0);
    const held = (owner: string, model: string, now: number) => {
      const ticket = lb.admit(owner, admitInput(`s-${owner}`, model), now);
      assert.equal(lb.route(ticket, now).kind, "hold");
      return ticket;
    };
    const m1 = held("r1", "m1", 0);
    held("r2", "m2", 10);
    held("r3", "m2", 20);
    lb.scrapeSucceeded("b", { running: 0, waiting: 0, usedTokens: 0 }, 100);
    // Both m2 requests go, oldest first; the m1 request at the head keeps waiting for its replica.
    assert.deepEqual(
      lb.drain(100).map((s) => [s.ticket.owner, s.placement.kind]),
      [
        ["r2", "replica"],
        ["r3", "replica"],
      ],
    );
    assert.equal(lb.queue.peek(), m1);
    assert.equal(lb.nextExpiryAt(), 30_000);
  });

  it("a held request past the wait bound is refused with queue_timeout", () => {
    const lb = core({ limits: { queueMaxWaitMs: 500 } });
    for (const id of ["a", "b"]) lb.scrapeSucceeded(id, { running: 1, waiting: 2, usedTokens: 0 }, 0);
    const ticket = lb.admit("r", admitInput("s"), 0);
    lb.route(ticket, 0);
    assert.deepEqual(lb.drain(499), []);
    const [expired] = lb.drain(500);
    assert.ok(expired?.placement.kind === "fail" && expired.placement.failure.code === "queue_timeout");
    assert.equal(lb.queue.length, 0);
  });

  it("refuses an unknown model (404) and a model only disabled replicas serve (503 no_replica)", () => {
    const lb = core({ replicas: [replica("a"), replica("d", "us", { model: "other", state: "disabled" })] });
    assert.equal(lb.checkModel("nope")?.status, 404);
    assert.equal(lb.checkModel("other"), null);
    const placement = lb.route(lb.admit("r", admitInput("s", "other"), 0), 0);
    assert.ok(placement.kind === "fail" && placement.failure.code === "no_replica");
  });

  it("a failed try excludes its replica; with nowhere else to go the retry fails with upstream_error", () => {
    const lb = core({ replicas: [replica("a")] });
    const ticket = lb.admit("r", admitInput("s"), 0);
    assert.equal(lb.route(ticket, 0).kind, "replica");
    assert.equal(lb.replicas.get("a")!.inFlight, 1);
    assert.equal(lb.mayRetry(ticket), true);
    const again = lb.retry(ticket, 1);
    assert.ok(again.kind === "fail" && again.failure.code === "upstream_error");
    assert.equal(lb.replicas.get("a")!.inFlight, 0);
  });

  it("a late request moves only to a target that can take it now; at the header timeout into the hold queue if it has room; off an unhealthy replica anyway", () => {
    const lb = core({ limits: { queueMaxLength: 1 } });
    lb.scrapeSucceeded("b", { running: 8, waiting: 5, usedTokens: 0 }, 0);
    const stuck = lb.admit("slow", admitInput("s"), 0);
    const placed = lb.route(stuck, 0);
    assert.ok(placed.kind === "replica" && placed.replicaId === "a");
    // b is full: held with a excluded, the request could only wait for b, and be refused while a idles.
    assert.equal(lb.canRedispatch(stuck, 1_000, "deadline"), false, "a may still answer");
    // At the header timeout the LB stops waiting for a: the hold queue can keep it until b has room.
    assert.equal(lb.canRedispatch(stuck, 1_000, "timeout"), true);
    // a fills up too: a new request is held, and the queue (length 1) is full.
    lb.scrapeSucceeded("a", { running: 8, waiting: 5, usedTokens: 0 }, 1_000);
    assert.equal(lb.route(lb.admit("held", admitInput("s2"), 1_000), 1_000).kind, "hold");
    assert.equal(lb.canRedispatch(stuck, 1_000, "timeout"), false, "nowhere to go: moving would only refuse it");
    assert.equal(lb.canRedispatch(stuck, 1_000, "unhealthy"), true, "a will not answer: a refusal now beats a timeout later");
    lb.scrapeSucceeded("b", { running: 0, waiting: 0, usedTokens: 0 }, 1_000);
    for (const cause of ["deadline", "timeout"] as const) assert.equal(lb.canRedispatch(stuck, 1_000, cause), true, `b can take it now (${cause})`);
  });

  it("via-peer forwards to an available peer only for client requests, preferring the snapshot match", () => {
    const peers = [
      { id: "lb-eu", url: "http://eu.test/", region: "eu" },
      { id: "lb-ap", url: "http://ap.test/", region: "ap" },
    ];
    const lb = core({ crossRegion: "via-peer", replicas: [replica("a"), replica("e", "eu")], peers });
    lb.scrapeSucceeded("a", { running: 1, waiting: 1, usedTokens: 0 }, 0);
    const report = (lbId: string, snapshot: number[]) => ({
      lbId,
      region: "x",
      time: 0,
      configVersion: 1,
      replicas: [],
      queueLength: 0,
      availableReplicas: 1,
      snapshot: { keys: snapshot, truncated: false },
    });
    lb.peerReported("lb-eu", report("lb-eu", []), 80, 0);
    lb.peerReported("lb-ap", report("lb-ap", [...keys]), 150, 0);
    const placement = lb.route(lb.admit("r", admitInput("s"), 0), 0);
    assert.ok(placement.kind === "peer" && placement.peerId === "lb-ap", JSON.stringify(placement));
    const forwarded = lb.route(lb.admit("r2", { ...admitInput("s2"), hop: 1 }, 0), 0);
    assert.equal(forwarded.kind, "hold");
    assert.equal(lb.totals.forwarded, 1);
  });
});

describe("completion", () => {
  it("learns the prompt at 2xx headers and the next turn at completion; records accuracy and telemetry", () => {
    const lb = core();
    const ticket = lb.admit("r", { ...admitInput("s"), nextTurnKeys: () => [...keys, 42] }, 100);
    lb.route(ticket, 100);
    const atHeaders = lb.headersReceived(ticket, 200, 100);
    assert.deepEqual(atHeaders, { index: "local", keys, targetId: ticket.target!.id });
    assert.equal(lb.headersReceived(ticket, 500, 100), null);
    const done = lb.complete(ticket, served("a reply"), 200);
    assert.deepEqual(done.learn?.keys, [...keys, 42]);
    assert.equal(done.telemetry().time, 100);
    assert.equal(done.telemetry().status, 200);
    assert.equal(done.telemetry().replicaId, ticket.target!.id);
    assert.deepEqual(done.prediction, { predicted: 0, actual: 0 });
    assert.equal(lb.replicas.get(ticket.target!.id)!.inFlight, 0);
    assert.equal(lb.totals.requests, 1);
  });

  it("without a reply the completion re-learns the prompt; a failure learns nothing", () => {
    const lb = core();
    const ticket = lb.admit("r", admitInput("s"), 0);
    lb.route(ticket, 0);
    assert.deepEqual(lb.complete(ticket, served(), 10).learn?.keys, keys);
    const failed = lb.admit("r2", admitInput("s2"), 0);
    lb.route(failed, 0);
    const completion = lb.complete(failed, { ...served(), status: 502, error: "boom", usage: null }, 10);
    assert.equal(completion.learn, null);
    assert.equal(lb.totals.errors, 1);
  });

  it("a usage count no engine could send (negative, not finite) is taken as unreported", () => {
    const lb = core();
    const ticket = lb.admit("r", admitInput("s"), 0);
    lb.route(ticket, 0);
    const done = lb.complete(ticket, { ...served(), usage: { promptTokens: -5, completionTokens: Number.NaN, cachedTokens: -1 } }, 10);
    assert.equal(done.prediction, null);
    assert.equal(done.telemetry().actualCachedTokens, null);
    assert.equal(lb.estimator.charsPerToken, 4, "the token estimate did not learn from a negative prompt count");
    assert.equal(
      lb.state(10, { startedAt: 0, telemetry: { lastSeq: 0, bufferSize: 0 } }).replicas.every((r) => r.cacheHitRate === null || r.cacheHitRate >= 0),
      true,
    );
  });

  it("a replica's cache hit rate is unknown (null), not 0, while its engine reports no cached tokens", () => {
    const lb = core({ replicas: [replica("a")] });
    const state = () => lb.state(10, { startedAt: 0, telemetry: { lastSeq: 0, bufferSize: 0 } }).replicas[0]!;
    const serve = (session: string, cachedTokens: number | null) => {
      const ticket = lb.admit(session, admitInput(session), 0);
      lb.route(ticket, 0);
      lb.complete(ticket, { ...served(), usage: { promptTokens: 100, completionTokens: 3, cachedTokens } }, 10);
    };
    for (const session of ["s1", "s2", "s3"]) serve(session, null);
    assert.equal(state().cache.cachedTokensReported, false);
    assert.equal(state().cacheHitRate, null, "an engine that reports prompt tokens only read as a 0% hit rate");
    // Once it reports cached tokens, the rate is over the answers that reported them.
    serve("s4", 40);
    assert.equal(state().cacheHitRate, 0.4);
  });

  it("calibrates the token estimate from the engine's usage, a step per answer", () => {
    const lb = core();
    const serve = (session: string) => {
      const ticket = lb.admit(session, admitInput(session), 0);
      lb.route(ticket, 0);
      lb.complete(ticket, { ...served(), usage: { promptTokens: 100, completionTokens: 1, cachedTokens: null } }, 10);
      return ticket;
    };
    assert.equal(serve("s0").view.inputTokens, 75, "300 characters at the prior 4 per token");
    const afterOne = lb.estimator.charsPerToken;
    assert.ok(afterOne < 4 && afterOne > 3, `one answer moves the ratio toward 3 by a step, not to 3: ${afterOne}`);
    // The engine keeps counting 100 tokens for 300 characters: the estimate follows it.
    for (let i = 1; i < 1000; i++) serve(`s${i}`);
    assert.ok(Math.abs(lb.estimator.charsPerToken - 3) < 0.05, `converges on the engine's 3 per token: ${lb.estimator.charsPerToken}`);
  });
});

describe("targets changed by a config", () => {
  it("a request dispatched before the replica's URL changed is released from the old record, not the new one", () => {
    const lb = core();
    const old = lb.admit("old", admitInput("s1"), 0);
    const placed = lb.route(old, 0);
    assert.ok(placed.kind === "replica");
    const id = placed.replicaId;
    const moved = lb.config.replicas.map((r) => (r.id === id ? { ...r, url: `http://${id}-moved.test/` } : r));
    lb.applyConfig(parseLbConfig({ ...lb.config, version: 2, replicas: moved }));
    lb.probeSucceeded(id, 1);
    const fresh = lb.admit("new", admitInput("s2"), 1);
    lb.route(fresh, 1);
    const record = lb.replicas.get(fresh.target!.id)!;
    const before = { inFlight: record.inFlight, queuedTokens: record.queuedTokens };
    lb.complete(old, served(), 2);
    assert.deepEqual({ inFlight: record.inFlight, queuedTokens: record.queuedTokens }, before);
  });

  it("a config the core cannot run throws and leaves the core exactly as it was", () => {
    const lb = core();
    const ticket = lb.admit("r0", admitInput("s0"), 0);
    lb.route(ticket, 0);
    lb.learn(lb.headersReceived(ticket, 200, 10)!, 10);
    const before = { config: lb.config, index: lb.index, peerIndex: lb.peerIndex, truth: lb.truth };
    // Past the prefix index's limit (the wire schema refuses it; a caller may build one by hand).
    const bad = {
      ...lb.config,
      version: 2,
      policy: "consistent-hash" as const,
      replicas: [...lb.config.replicas, { ...lb.config.replicas[0]!, id: "c", url: "http://c.test/" }],
      index: { ...lb.config.index, capacityBlocks: 2 ** 31 },
    };
    assert.throws(() => lb.applyConfig(bad), /capacityBlocks/);
    assert.equal(lb.config, before.config);
    assert.equal(lb.config.version, 1);
    assert.deepEqual([lb.index, lb.peerIndex, lb.truth], [before.index, before.peerIndex, before.truth]);
    assert.deepEqual([...lb.replicas.keys()], ["a", "b"], "no replica of the refused config was added");
    assert.equal(lb.index.match(keys, 20).depthByReplica.get(ticket.target!.id), keys.length, "what the index learned stays");
    // Still least-request, not the refused consistent-hash: every session goes to the idle replica.
    lb.complete(ticket, served(), 20);
    lb.replicas.get("a")!.inFlight = 1_000;
    const targets = new Set(
      Array.from({ length: 20 }, (_, i) => lb.route(lb.admit(`r${i + 1}`, admitInput(`s${i + 1}`), 30), 30)).map((p) =>
        p.kind === "replica" ? p.replicaId : p.kind,
      ),
    );
    assert.deepEqual([...targets], ["b"]);
    // A config it can run still applies.
    lb.applyConfig(parseLbConfig({ ...lb.config, version: 2, index: { capacityBlocks: 5_000 } }));
    assert.equal(lb.config.version, 2);
    assert.equal(lb.index.capacityBlocks, 5_000);
  });

  it("a peer that stops reporting, or leaves the config, stops counting toward its replicas' load", () => {
    const lb = core({ peers: [{ id: "lb-eu", url: "http://eu.test/", region: "eu" }] });
    const a = lb.replicas.get("a")!;
    lb.peerReported("lb-eu", euReport({ replicas: [{ id: "a", inFlight: 10, inFlightTokens: 50_000, pendingPrefillTokens: 50_000, full: false }] }), 5, 0);
    assert.equal(a.peerQueuedTokens, 50_000);
    // The peer dies: its polls fail. While its last report is fresh (3 poll intervals) it still counts.
    lb.route(lb.admit("r0", admitInput("s0"), 3_000), 3_000);
    assert.equal(a.peerQueuedTokens, 50_000);
    // Once the report has gone stale, the next placement no longer counts it.
    lb.peerPollFailed("lb-eu", "ECONNREFUSED");
    const later = 60_000;
    const ticket = lb.admit("r", admitInput("s"), later);
    lb.route(ticket, later);
    assert.equal(a.peerQueuedTokens, 0);
    assert.equal(a.peerPendingPrefillTokens, 0);
  });
});

/** A report from the peer lb-eu (region eu) with one available replica, and `fields` over it. */
function euReport(fields: Partial<PeerReportBody> = {}): PeerReportBody {
  return { lbId: "lb-eu", region: "eu", time: 0, configVersion: 1, queueLength: 0, availableReplicas: 1, replicas: [], ...fields };
}

describe("peer report", () => {
  it("a peer's complete snapshot replaces what it reported before; a truncated one or none adds to it", () => {
    const lb = core({ crossRegion: "via-peer", peers: [{ id: "lb-eu", url: "http://eu.test/", region: "eu" }] });
    const other = chatBlockKeys([{ role: "user", content: "y".repeat(300) }]);
    const report = (snapshot?: { keys: number[]; truncated: boolean }) => euReport(snapshot ? { snapshot } : {});
    const peerDepth = (k: readonly number[], now: number) => lb.peerIndex.match(k, now).depthByReplica.get("lb-eu") ?? 0;
    lb.peerReported("lb-eu", report({ keys: [...keys], truncated: false }), 5, 0);
    assert.equal(peerDepth(keys, 0), keys.length);
    lb.peerReported("lb-eu", report(), 5, 1_000); // no snapshot asked for or sent: nothing learned either way
    assert.equal(peerDepth(keys, 1_000), keys.length);
    lb.peerReported("lb-eu", report({ keys: [...other], truncated: true }), 5, 2_000);
    assert.equal(peerDepth(keys, 2_000), keys.length, "a truncated snapshot says nothing of the keys below its cut");
    lb.peerReported("lb-eu", report({ keys: [...other], truncated: false }), 5, 3_000);
    assert.equal(peerDepth(keys, 3_000), 0, "the peer no longer reports the conversation: it is not matched for it");
    assert.equal(peerDepth(other, 3_000), other.length);
  });

  it("a request goes only to a peer with an available replica of its model (the peer would answer 404)", () => {
    const peer = { id: "lb-eu", url: "http://eu.test/", region: "eu" };
    const lb = core({ crossRegion: "via-peer", replicas: [replica("a")], peers: [peer] });
    lb.scrapeSucceeded("a", { running: 1, waiting: 1, usedTokens: 0 }, 0);
    lb.peerReported("lb-eu", euReport({ availableReplicas: 1, availableByModel: { other: 1, m: 0 } }), 5, 0);
    assert.equal(lb.route(lb.admit("r1", admitInput("s1", "m"), 0), 0).kind, "hold", "the peer's free replica serves another model");
    lb.peerReported("lb-eu", euReport({ availableReplicas: 1, availableByModel: { other: 0, m: 1 } }), 5, 0);
    assert.equal(lb.route(lb.admit("r2", admitInput("s2", "m"), 0), 0).kind, "peer");
    // An older peer reports no breakdown: its count stands for every model, as before.
    lb.peerReported("lb-eu", euReport({ availableReplicas: 1 }), 5, 0);
    assert.equal(lb.route(lb.admit("r3", admitInput("s3", "m"), 0), 0).kind, "peer");
    // This LB reports its own availability by model, every local model listed.
    const mixed = core({ replicas: [replica("a"), replica("b", "us", { model: "other" })] });
    mixed.scrapeSucceeded("b", { running: 1, waiting: 1, usedTokens: 0 }, 0);
    assert.deepEqual(mixed.peerReport(0, 0).availableByModel, { m: 1, other: 0 });
  });

  it("a keyless request never goes to a peer whose region requires client keys; a keyed one may", () => {
    const peer = { id: "lb-eu", url: "http://eu.test/", region: "eu" };
    const lb = core({ crossRegion: "via-peer", replicas: [replica("a")], peers: [peer] });
    lb.scrapeSucceeded("a", { running: 1, waiting: 1, usedTokens: 0 }, 0);
    lb.peerReported("lb-eu", euReport({ availableReplicas: 1, clientKeysRequired: true }), 5, 0);
    assert.equal(lb.route(lb.admit("r1", admitInput("s1"), 0), 0).kind, "hold");
    assert.equal(lb.route(lb.admit("r2", { ...admitInput("s2"), clientKeyed: true }, 0), 0).kind, "peer");
    // This LB says so in its own report.
    assert.equal(core({ clientAuth: { required: true, keys: [] } }).peerReport(0, 0).clientKeysRequired, true);
  });

  it("a held keyed request goes to a key-requiring peer that frees up, past a keyless request held before it", () => {
    const peer = { id: "lb-eu", url: "http://eu.test/", region: "eu" };
    const lb = core({ crossRegion: "via-peer", replicas: [replica("a")], peers: [peer] });
    lb.scrapeSucceeded("a", { running: 1, waiting: 1, usedTokens: 0 }, 0);
    lb.peerReported("lb-eu", euReport({ availableReplicas: 0, clientKeysRequired: true }), 5, 0);
    const keyless = lb.admit("keyless", admitInput("s1"), 0);
    const keyed = lb.admit("keyed", { ...admitInput("s2"), clientKeyed: true }, 0);
    assert.equal(lb.route(keyless, 0).kind, "hold");
    assert.equal(lb.route(keyed, 0).kind, "hold");
    lb.peerReported("lb-eu", euReport({ time: 10, availableReplicas: 1, clientKeysRequired: true }), 5, 10);
    assert.deepEqual(
      lb.drain(10).map((s) => [s.ticket.owner, s.placement.kind]),
      [["keyed", "peer"]],
      "the keyed request waited behind a keyless one that the peer may not take",
    );
    assert.equal(lb.queue.peek(), keyless);
  });

  it("carries in-flight tokens, availability, the queue and a snapshot of recent keys", () => {
    const lb = core();
    const ticket = lb.admit("r", admitInput("s"), 0);
    lb.route(ticket, 0);
    lb.learn(lb.headersReceived(ticket, 200, 100)!, 0);
    const report = lb.peerReport(0, 100);
    assert.equal(report.availableReplicas, 2);
    assert.equal(report.queueLength, 0);
    assert.equal(report.replicas.find((r) => r.id === ticket.target!.id)?.inFlightTokens, 75);
    assert.deepEqual([...report.snapshot!.keys].sort(), [...keys].sort());
  });
});

describe("request view", () => {
  it("tells chat keys (64 characters each) from trace keys (tokens only): RequestView.keyChars", () => {
    const lb = core();
    assert.equal(lb.admit("r", admitInput("s"), 0).view.keyChars, 64);
    assert.equal(lb.admit("t", { keys, sessionKey: "s", model: null, hop: 0, inputTokens: 1024, tokensPerBlock: 512 }, 0).view.keyChars, undefined);
  });
});
