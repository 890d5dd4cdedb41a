import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type PeerView, admittedConcurrencyAfterScrape, decideAvailability, isReplicaFull } from "./availability";
import { traceBlockKeys } from "./keys";
import { PrefixIndex } from "./prefix-index";
import type { CandidateView } from "./types";

function replica(id: string, over: Partial<CandidateView> = {}): CandidateView {
  return { id, region: "us-ashburn", rttMs: 5, inFlight: 0, queuedTokens: 0, pendingPrefillTokens: 0, scraped: null, full: false, healthy: true, ...over };
}

function peer(id: string, over: Partial<PeerView> = {}): PeerView {
  return { id, region: `region-${id}`, rttMs: 100, availableReplicas: 2, queueLength: 0, ...over };
}

describe("isReplicaFull (SkyLB full rule)", () => {
  it("is full when the engine reported waiting requests at the last scrape", () => {
    assert.equal(isReplicaFull({ waiting: 1, inFlight: 0, admittedConcurrency: 64 }), true);
    assert.equal(isReplicaFull({ waiting: 0, inFlight: 10, admittedConcurrency: 64 }), false);
  });

  it("is full when this LB's in-flight reached the concurrency the replica was seen to admit", () => {
    assert.equal(isReplicaFull({ waiting: 0, inFlight: 64, admittedConcurrency: 64 }), true);
    assert.equal(isReplicaFull({ waiting: 0, inFlight: 63, admittedConcurrency: 64 }), false);
  });

  it("assumes not full before the first scrape or when no limit was observed", () => {
    assert.equal(isReplicaFull({ waiting: null, inFlight: 500, admittedConcurrency: null }), false);
    assert.equal(isReplicaFull({ waiting: undefined, inFlight: 3, admittedConcurrency: 0 }), false);
  });

  it("rejects nonsense counts", () => {
    assert.throws(() => isReplicaFull({ waiting: -1, inFlight: 0, admittedConcurrency: 4 }), /waiting/);
    assert.throws(() => isReplicaFull({ waiting: 0, inFlight: Number.NaN, admittedConcurrency: 4 }), /inFlight/);
  });
});

describe("admittedConcurrencyAfterScrape", () => {
  const after = (previous: number | null, running: number, waiting: number, inFlight: number) =>
    admittedConcurrencyAfterScrape({ previous, running, waiting, inFlight });

  it("is what ran while requests waited (SkyLB), up or down", () => {
    assert.equal(after(null, 12, 3, 0), 12);
    assert.equal(after(40, 12, 3, 12), 12);
    assert.equal(after(4, 30, 1, 4), 30);
  });

  it("grows by an eighth, at least one, while the engine runs the limit, nothing waits and this LB is at it", () => {
    assert.equal(after(4, 4, 0, 4), 5);
    assert.equal(after(64, 64, 0, 64), 72);
    assert.equal(after(64, 80, 0, 70), 72);
  });

  it("stays without evidence: below the limit, nothing learned yet, or nothing running", () => {
    assert.equal(after(64, 10, 0, 10), 64);
    // This LB is at the limit, but the engine was running fewer: the scrape predates the dispatches.
    assert.equal(after(64, 10, 0, 64), 64);
    assert.equal(after(null, 10, 0, 10), null);
    assert.equal(after(8, 0, 5, 8), 8);
  });

  it("rejects nonsense counts", () => {
    assert.throws(() => after(4, -1, 0, 0), /running/);
    assert.throws(() => after(4, 1, Number.NaN, 0), /waiting/);
    assert.throws(() => after(4, 1, 0, -2), /inFlight/);
  });
});

describe("decideAvailability", () => {
  it("routes locally whenever a local replica is not full, listing only the routable ones", () => {
    const d = decideAvailability({
      mode: "via-peer",
      local: [replica("l1", { full: true }), replica("l2"), replica("l3", { healthy: false })],
      peers: [peer("eu", { rttMs: 1 })],
      hop: 0,
    });
    assert.equal(d.action, "route");
    assert.deepEqual(d.action === "route" && d.candidates.map((c) => c.id), ["l2"]);
  });

  it("direct mode offers every non-full candidate of every region", () => {
    const d = decideAvailability({
      mode: "direct",
      local: [replica("us", { full: true }), replica("eu", { region: "eu-frankfurt", rttMs: 90 }), replica("ap", { region: "ap-seoul", rttMs: 180 })],
      peers: [],
      hop: 0,
    });
    assert.deepEqual(d.action === "route" && d.candidates.map((c) => c.id), ["eu", "ap"]);
    const all = decideAvailability({ mode: "direct", local: [replica("us", { full: true })], peers: [peer("eu")], hop: 0 });
    assert.equal(all.action, "queue", "direct mode never forwards to a peer LB");
  });

  it("forwards to an available peer when all local replicas are full: longest snapshot match, then lowest RTT", () => {
    const full = [replica("l1", { full: true }), replica("l2", { full: true })];
    const peers = [
      peer("eu", { rttMs: 90 }),
      peer("ap", { rttMs: 180 }),
      peer("sa", { rttMs: 40, availableReplicas: 0 }),
      peer("af", { rttMs: 30, queueLength: 5 }),
    ];
    const byRtt = decideAvailability({ mode: "via-peer", local: full, peers, hop: 0 });
    assert.deepEqual(byRtt.action === "forward" && byRtt.peerId, "eu", "sa has no available replica, af's queue exceeds tau");

    const index = new PrefixIndex({ capacityBlocks: 1000 });
    const keys = traceBlockKeys([1, 2, 3, 4, 5, 6]);
    index.learnSnapshot("ap", keys.slice(0, 5), 0);
    index.learnSnapshot("eu", keys.slice(0, 2), 0);
    const byMatch = decideAvailability({ mode: "via-peer", local: full, peers, hop: 0, index, keys, now: 1 });
    assert.equal(byMatch.action, "forward");
    assert.equal(byMatch.action === "forward" && byMatch.peerId, "ap");
    assert.match(byMatch.action === "forward" ? byMatch.reason : "", /snapshot match 5 blocks/);
  });

  it("treats a queue of exactly tau as available and tau + 1 as not", () => {
    const full = [replica("l1", { full: true })];
    assert.equal(decideAvailability({ mode: "via-peer", local: full, peers: [peer("eu", { queueLength: 4 })], hop: 0 }).action, "forward");
    assert.equal(decideAvailability({ mode: "via-peer", local: full, peers: [peer("eu", { queueLength: 5 })], hop: 0 }).action, "queue");
    assert.equal(decideAvailability({ mode: "via-peer", local: full, peers: [peer("eu", { queueLength: 5 })], hop: 0, tau: 8 }).action, "forward");
  });

  it("never forwards a request that was already forwarded: it queues instead", () => {
    const d = decideAvailability({ mode: "via-peer", local: [replica("l1", { full: true })], peers: [peer("eu")], hop: 1 });
    assert.equal(d.action, "queue");
    assert.match(d.action === "queue" ? d.reason : "", /hop/);
  });

  it("queues when neither a local replica nor a peer is available", () => {
    const d = decideAvailability({ mode: "via-peer", local: [replica("l1", { full: true })], peers: [peer("eu", { availableReplicas: 0 })], hop: 0 });
    assert.equal(d.action, "queue");
    assert.equal(decideAvailability({ mode: "via-peer", local: [], peers: [], hop: 0 }).action, "queue");
  });

  it("rejects a bad mode, hop or peer with the field named", () => {
    assert.throws(() => decideAvailability({ mode: "teleport" as "direct", local: [], peers: [], hop: 0 }), /mode/);
    assert.throws(() => decideAvailability({ mode: "via-peer", local: [], peers: [], hop: -1 }), /hop/);
    assert.throws(
      () => decideAvailability({ mode: "via-peer", local: [replica("l", { full: true })], peers: [peer("eu", { queueLength: Number.NaN })], hop: 0 }),
      /peers\[0\]\.queueLength/,
    );
    assert.throws(() => decideAvailability({ mode: "via-peer", local: [], peers: [], hop: 0, tau: -2 }), /tau/);
    assert.throws(() => decideAvailability({ mode: "direct", local: [null as unknown as CandidateView], peers: [], hop: 0 }), /local\[0\]/);
  });
});
