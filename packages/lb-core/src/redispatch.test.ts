// Where a request that failed before its first byte may go next (redispatch.ts, LbCore.retry): never
// back to the endpoint that just failed it, even when the console took that peer out of the config
// and put it back under the same URL (a failover flap, a rollback), which makes a new record.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type LbConfigInput, parseLbConfig } from "@meridian/protocol";
import { chatBlockKeys } from "@meridian/routing";
import { testCore, testReplica } from "./test-helpers";

const keys = chatBlockKeys([{ role: "user", content: "x".repeat(4_000) }]);
const input = (session: string) => ({ keys, sessionKey: session, model: null, hop: 0, promptChars: 4_000 });
const eu = { id: "lb-eu", url: "http://eu.test/", region: "eu" };
const report = { lbId: "lb-eu", region: "eu", time: 0, configVersion: 1, queueLength: 0, availableReplicas: 1, replicas: [] };
const config = (peers: unknown[], version: number): LbConfigInput =>
  ({
    schema: "meridian.lb-config/1",
    version,
    lbId: "lb-us",
    region: "us",
    policy: "least-request",
    crossRegion: "via-peer",
    replicas: [testReplica("a")],
    peers,
  }) as LbConfigInput;

describe("retry after a forward failed", () => {
  for (const flap of [false, true]) {
    it(`does not go back to the peer that refused it${flap ? ", removed and put back under its URL meanwhile" : ""}`, () => {
      const lb = testCore(config([eu], 1));
      lb.scrapeSucceeded("a", { running: 1, waiting: 1, usedTokens: 0 }, 0); // a is full: forwarded
      lb.peerReported("lb-eu", report, 5, 0);
      const ticket = lb.admit("r", input("s"), 0);
      assert.equal(lb.route(ticket, 0).kind, "peer");
      if (flap) {
        lb.applyConfig(parseLbConfig(config([], 2)));
        lb.applyConfig(parseLbConfig(config([eu], 3)));
      }
      lb.peerReported("lb-eu", report, 5, 100);
      lb.scrapeSucceeded("a", { running: 1, waiting: 1, usedTokens: 0 }, 100);
      assert.equal(lb.onCurrentTarget(ticket), true, "the same URL is the same LB");
      const retried = lb.retry(ticket, 100);
      assert.ok(!(retried.kind === "peer" && retried.peerId === "lb-eu"), "the retry went back to the LB that refused it");
    });
  }

  it("may go to the LB a peer's id was re-pointed to", () => {
    const lb = testCore(config([eu], 1));
    lb.scrapeSucceeded("a", { running: 1, waiting: 1, usedTokens: 0 }, 0);
    lb.peerReported("lb-eu", report, 5, 0);
    const ticket = lb.admit("r", input("s"), 0);
    assert.equal(lb.route(ticket, 0).kind, "peer");
    lb.applyConfig(parseLbConfig(config([{ ...eu, url: "http://eu-2.test/" }], 2)));
    lb.peerReported("lb-eu", report, 5, 100);
    assert.equal(lb.onCurrentTarget(ticket), false);
    assert.equal(lb.canRedispatch(ticket, 100, "unhealthy"), true);
    const retried = lb.retry(ticket, 100);
    assert.ok(retried.kind === "peer" && retried.peerId === "lb-eu");
  });

  it("past its deadline, counts a peer's free replica taken by a forward made since its last report", () => {
    const lb = testCore(config([eu], 1));
    lb.peerReported("lb-eu", report, 5, 0);
    // Both on a, which then looks full: one free replica at lb-eu, by its report.
    const tickets = ["r1", "r2"].map((id) => lb.admit(id, input(id), 0));
    for (const ticket of tickets) assert.equal(lb.route(ticket, 0).kind, "replica");
    lb.scrapeSucceeded("a", { running: 2, waiting: 1, usedTokens: 0 }, 10);
    const [first, second] = tickets as [(typeof tickets)[number], (typeof tickets)[number]];
    assert.equal(lb.canRedispatch(first, 2_000, "deadline"), true);
    const moved = lb.retry(first, 2_000);
    assert.ok(moved.kind === "peer" && moved.peerId === "lb-eu");
    assert.equal(lb.canRedispatch(second, 2_000, "deadline"), false, "the free replica the first forward took still counted");
    // Its next report shows what it has now.
    lb.peerReported("lb-eu", { ...report, availableReplicas: 2 }, 5, 2_100);
    assert.equal(lb.canRedispatch(second, 2_100, "deadline"), true);
  });

  it("past its deadline, goes to the peer whose free replica no forward has taken since its report", () => {
    // Two peers, one free replica each by their reports; lb-eu is the nearer, so the first forward takes its replica.
    const ap = { id: "lb-ap", url: "http://ap.test/", region: "ap" };
    const lb = testCore(config([eu, ap], 1));
    lb.peerReported("lb-eu", report, 5, 0);
    lb.peerReported("lb-ap", { ...report, lbId: "lb-ap", region: "ap" }, 50, 0);
    const stuck = lb.admit("r1", input("r1"), 0);
    assert.equal(lb.route(stuck, 0).kind, "replica");
    lb.scrapeSucceeded("a", { running: 1, waiting: 1, usedTokens: 0 }, 10); // a is full now
    const forwarded = lb.route(lb.admit("r2", input("r2"), 20), 20);
    assert.ok(forwarded.kind === "peer" && forwarded.peerId === "lb-eu");
    assert.equal(lb.canRedispatch(stuck, 2_000, "deadline"), true, "lb-ap's replica is still free");
    const moved = lb.retry(stuck, 2_000, "deadline");
    assert.ok(moved.kind === "peer" && moved.peerId === "lb-ap", `moved to ${JSON.stringify(moved)}: the replica a forward took since lb-eu's report`);
  });
});

describe("what a peer's report cannot show: the forwards sent since its poll left", () => {
  const ap = { id: "lb-ap", url: "http://ap.test/", region: "ap" };
  /** a holds `stuck`, then looks full; lb-eu reported one free replica at 0 (poll RTT 5 ms). */
  function stuckWithPeers(peers: unknown[], model: string | null = null) {
    const base = config(peers, 1);
    const lb = testCore({ ...base, replicas: [testReplica("a", model === null ? {} : { model })] } as LbConfigInput);
    const stuck = lb.admit("r1", { ...input("r1"), model }, 0);
    assert.equal(lb.route(stuck, 0).kind, "replica");
    lb.scrapeSucceeded("a", { running: 1, waiting: 1, usedTokens: 0 }, 10);
    /** A request forwarded at `at` whose request leaves for the peer then too (`leaves`), as a driver says. */
    const forward = (id: string, at: number, model: string | null = null, leaves = true) => {
      const ticket = lb.admit(id, { ...input(id), model }, at);
      const placed = lb.route(ticket, at);
      if (leaves) lb.forwardLeft(ticket, at);
      return placed;
    };
    return { lb, stuck, forward };
  }

  it("at the cap too, the move goes to the peer whose free replica no forward has taken", () => {
    const { lb, stuck, forward } = stuckWithPeers([eu, ap]);
    lb.peerReported("lb-eu", report, 5, 0);
    lb.peerReported("lb-ap", { ...report, lbId: "lb-ap", region: "ap" }, 50, 0);
    const forwarded = forward("r2", 20);
    assert.ok(forwarded.kind === "peer" && forwarded.peerId === "lb-eu");
    assert.equal(lb.canRedispatch(stuck, 2_000, "timeout"), true);
    const moved = lb.retry(stuck, 2_000, "timeout");
    assert.ok(moved.kind === "peer" && moved.peerId === "lb-ap", `moved to ${moved.kind === "peer" ? moved.peerId : moved.kind}`);
  });

  it("a report whose poll left before a forward does not free the replica that forward took", () => {
    const { lb, stuck, forward } = stuckWithPeers([eu]);
    lb.peerReported("lb-eu", report, 5, 0);
    // A poll leaves at 980, a request is forwarded at 1,000, and the poll's answer, built before the
    // forward reached lb-eu (still one free replica), arrives at 1,030.
    assert.equal(forward("r2", 1_000).kind, "peer");
    lb.peerReported("lb-eu", { ...report, time: 1_005 }, 50, 1_030);
    assert.equal(lb.canRedispatch(stuck, 1_040, "deadline"), false, "the replica the forward took counted free again");
    // A poll that left after the forward shows it.
    lb.peerReported("lb-eu", { ...report, time: 1_100, availableReplicas: 1 }, 50, 1_150);
    assert.equal(lb.canRedispatch(stuck, 1_160, "deadline"), true);
  });

  it("a forward of another model does not take the peer's free replica of this model", () => {
    const { lb, stuck, forward } = stuckWithPeers([eu], "m");
    const byModel = { ...report, availableReplicas: 2, availableByModel: { m: 1, other: 1 } };
    lb.peerReported("lb-eu", byModel, 5, 0);
    const other = forward("r2", 20, "other");
    assert.ok(other.kind === "peer" && other.peerId === "lb-eu");
    assert.equal(lb.canRedispatch(stuck, 2_000, "deadline"), true, "lb-eu's free m replica counted taken by a forward of model other");
    // One of model m does take it.
    assert.equal(forward("r3", 30, "m").kind, "peer");
    assert.equal(lb.canRedispatch(stuck, 2_000, "deadline"), false);
  });

  it("a forward still waiting here for a connection to the peer stays counted through any report", () => {
    const { lb, stuck } = stuckWithPeers([eu]);
    lb.peerReported("lb-eu", report, 5, 0);
    const waiting = lb.admit("r2", input("r2"), 1_000);
    assert.equal(lb.route(waiting, 1_000).kind, "peer");
    // Polls that left after the placement, before the request left: none can show it.
    lb.peerReported("lb-eu", { ...report, time: 1_500 }, 50, 1_550);
    assert.equal(lb.canRedispatch(stuck, 1_560, "deadline"), false, "the replica the waiting forward will take counted free");
    lb.forwardLeft(waiting, 2_000);
    lb.peerReported("lb-eu", { ...report, time: 2_040, availableReplicas: 0 }, 50, 2_060);
    assert.equal(lb.canRedispatch(stuck, 2_070, "deadline"), false);
    // Once the peer has answered it and reports its replica free again, it counts so.
    lb.peerReported("lb-eu", { ...report, time: 3_000 }, 50, 3_050);
    assert.equal(lb.canRedispatch(stuck, 3_060, "deadline"), true);
    // A forward that never left (moved before it got a connection) takes nothing.
    const moved = lb.admit("r3", input("r3"), 3_100);
    assert.equal(lb.route(moved, 3_100).kind, "peer");
    assert.equal(lb.canRedispatch(stuck, 3_110, "deadline"), false);
    lb.retry(moved, 3_120);
    assert.equal(lb.canRedispatch(stuck, 3_130, "deadline"), true);
  });

  it("a forward that ended here takes the peer's replica no more, report or none", () => {
    const { lb, stuck } = stuckWithPeers([eu]);
    lb.peerReported("lb-eu", report, 5, 0);
    const ticket = lb.admit("r2", input("r2"), 20);
    assert.equal(lb.route(ticket, 20).kind, "peer");
    lb.forwardLeft(ticket, 20);
    assert.equal(lb.canRedispatch(stuck, 30, "deadline"), false);
    lb.complete(ticket, { status: 200, error: null, usage: null, reply: "", outputEvents: 1, ttftMs: 5, e2eMs: 10 }, 30);
    // lb-eu stops answering its polls: its last report still counts, and the ended forward does not.
    lb.peerPollFailed("lb-eu", "timeout");
    assert.equal(lb.canRedispatch(stuck, 40, "deadline"), true);
  });

  it("a peer removed and put back under its URL keeps counting a forward still waiting for its connection", () => {
    const { lb, stuck } = stuckWithPeers([eu]);
    lb.peerReported("lb-eu", report, 5, 0);
    const waiting = lb.admit("r2", input("r2"), 1_000);
    assert.equal(lb.route(waiting, 1_000).kind, "peer");
    assert.equal(lb.canRedispatch(stuck, 1_010, "deadline"), false);
    // A failover flap: the peer leaves the config and comes back, a new record under the same URL.
    const base = config([], 2);
    lb.applyConfig(parseLbConfig({ ...base, replicas: [testReplica("a")] } as LbConfigInput));
    lb.applyConfig(parseLbConfig({ ...config([eu], 3), replicas: [testReplica("a")] } as LbConfigInput));
    lb.peerReported("lb-eu", { ...report, time: 1_500 }, 50, 1_550);
    assert.equal(lb.canRedispatch(stuck, 1_560, "deadline"), false, "the replica the waiting forward will take counted free after the flap");
  });
});
