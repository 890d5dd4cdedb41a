// The tuner's trial split as the LB core applies it: a session's arm is stable, each arm holds its
// share, requests are routed with their arm's weights, and telemetry says which arm and whether the
// other arm's weights would have chosen another replica.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { chatBlockKeys } from "@meridian/routing";
import { parseLbConfig, type LbConfigInput } from "@meridian/protocol";
import { armOf } from "@meridian/tuner";
import type { Outcome } from "./completion";
import { LbCore } from "./lb-core";

const keys = chatBlockKeys([{ role: "user", content: "y".repeat(300) }]);
const input = (sessionKey: string) => ({ keys, sessionKey, model: null, hop: 0, promptChars: 300 });
const served: Outcome = {
  status: 200,
  error: null,
  usage: { promptTokens: 75, completionTokens: 3, cachedTokens: 0 },
  reply: "",
  outputEvents: 3,
  ttftMs: 5,
  e2eMs: 9,
};
const trial = { id: "7-9f3a11c2", salt: "9f3a11c2", share: 0.5, candidate: { rtt: 100, queue: 0.05 } };

/** Two gorgo replicas: "near" (10 ms) and "far" (300 ms), the far one idle and the near one loaded. */
function core(extra: Partial<LbConfigInput> = {}) {
  const config = parseLbConfig({
    schema: "meridian.lb-config/1",
    version: 3,
    lbId: "lb-us",
    region: "us",
    policy: "gorgo",
    weights: { rtt: 0.05, queue: 1 },
    replicas: [
      { id: "near", url: "http://near.test/", region: "us", model: "m" },
      { id: "far", url: "http://far.test/", region: "eu", model: "m" },
    ],
    ...extra,
  });
  const lb = new LbCore<string>({ config, seed: 1, peerPollIntervalMs: 1_000 });
  lb.probeSucceeded("near", 10);
  lb.probeSucceeded("far", 300);
  return lb;
}

describe("trial split", () => {
  it("a session is always in the same arm and routed with that arm's weights", () => {
    const lb = core({ trial });
    for (let i = 0; i < 200; i++) {
      const session = `user-${i}`;
      const first = lb.admit("a", input(session), 0);
      const again = lb.admit("b", input(session), 5_000);
      const arm = armOf(session, trial.salt, trial.share);
      assert.equal(first.trial!.arm, arm);
      assert.equal(again.trial!.arm, arm);
      assert.deepEqual(first.weights, arm === "candidate" ? trial.candidate : lb.config.weights);
      assert.deepEqual(first.trial!.other, arm === "candidate" ? lb.config.weights : trial.candidate);
    }
  });

  it("over 10k sessions each arm holds its share within ±2 %", () => {
    for (const share of [0.5, 0.2]) {
      const lb = core({ trial: { ...trial, share } });
      let candidates = 0;
      for (let i = 0; i < 10_000; i++) if (lb.admit("r", input(`s/${i}`), 0).trial!.arm === "candidate") candidates++;
      assert.ok(Math.abs(candidates / 10_000 - share) <= 0.02, `share ${share}: ${candidates / 10_000}`);
    }
  });

  it("telemetry carries the trial, the arm and whether the other weights would have routed elsewhere", () => {
    const lb = core({ trial });
    // Load the near replica so the two arms disagree: the incumbent (W_queue 1) avoids the queue, the
    // candidate (W_rtt 100) stays near.
    lb.replicas.get("near")!.queuedTokens = 100_000;
    const seen = { incumbent: 0, candidate: 0 };
    for (let i = 0; i < 40; i++) {
      const ticket = lb.admit("r", input(`s${i}`), 0);
      const placement = lb.route(ticket, 0);
      assert.equal(placement.kind, "replica");
      const event = lb.complete(ticket, served, 0).telemetry();
      const arm = ticket.trial!.arm;
      seen[arm]++;
      assert.equal(event.trialId, trial.id);
      assert.equal(event.arm, arm);
      assert.equal(event.triggered, true, "near for the candidate, far for the incumbent");
      assert.equal(event.replicaId, arm === "candidate" ? "near" : "far");
      assert.deepEqual(event.weights, arm === "candidate" ? trial.candidate : lb.config.weights);
    }
    assert.ok(seen.incumbent > 0 && seen.candidate > 0);
  });

  it("a candidate that routes like the incumbent triggers nothing; outside a trial nothing is tagged", () => {
    const same = core({ trial: { ...trial, candidate: { rtt: 0.05, queue: 1 } } });
    for (let i = 0; i < 20; i++) {
      const ticket = same.admit("r", input(`s${i}`), 0);
      same.route(ticket, 0);
      assert.equal(same.complete(ticket, served, 0).telemetry().triggered, false);
    }
    const plain = core();
    const ticket = plain.admit("r", input("s"), 0);
    plain.route(ticket, 0);
    const event = plain.complete(ticket, served, 0).telemetry();
    assert.equal(ticket.trial, null);
    assert.equal("trialId" in event || "arm" in event || "triggered" in event, false);
  });

  it("a new config without the trial ends it for new requests; the LB's state shows the running trial", () => {
    const lb = core({ trial });
    assert.deepEqual(lb.state(0, { startedAt: 0, telemetry: { lastSeq: 0, bufferSize: 0 } }).trial, trial);
    const { trial: _dropped, ...rest } = lb.config;
    lb.applyConfig({ ...rest, version: 4 });
    assert.equal(lb.admit("r", input("s1"), 0).trial, null);
    assert.equal(lb.state(0, { startedAt: 0, telemetry: { lastSeq: 0, bufferSize: 0 } }).trial, undefined);
  });

  it("under a policy that does not read the weights, a trial triggers nothing and changes no routing", () => {
    const lb = core({ trial, policy: "round-robin" });
    const placed: string[] = [];
    for (let i = 0; i < 6; i++) {
      const ticket = lb.admit("r", input(`s-${i}`), i);
      const placement = lb.route(ticket, i);
      assert.ok(placement.kind === "replica");
      placed.push(placement.replicaId);
      assert.equal(ticket.trial!.triggered, false);
      lb.complete(ticket, served, i);
    }
    assert.deepEqual(placed, ["near", "far", "near", "far", "near", "far"]);
  });

  it("a retry that ends at a peer says nothing of triggering: the abandoned replica's counterfactual is dropped", () => {
    const lb = core({ trial, crossRegion: "via-peer", replicas: [{ id: "near", url: "http://near.test/", region: "us", model: "m" }] });
    lb.applyConfig({ ...lb.config, version: 4, peers: [{ id: "lb-eu", url: "http://eu.test/", region: "eu", credentialHashes: [] }] });
    lb.peerReported("lb-eu", { lbId: "lb-eu", region: "eu", time: 0, configVersion: 1, replicas: [], queueLength: 0, availableReplicas: 1 }, 80, 0);
    const ticket = lb.admit("r", input("s-retry"), 0);
    assert.equal(lb.route(ticket, 0).kind, "replica");
    assert.equal(ticket.trial!.triggered, false, "one replica: both arms pick it");
    // The replica fails before any byte: the retry finds no other replica and forwards.
    const retried = lb.retry(ticket, 1);
    assert.ok(retried.kind === "peer" && retried.peerId === "lb-eu", JSON.stringify(retried));
    const event = lb.complete(ticket, served, 2).telemetry();
    assert.equal(event.forwarded, true);
    assert.equal(event.arm, ticket.trial!.arm);
    assert.equal("triggered" in event, false, `a forwarded request carries no triggered, got ${String(event.triggered)}`);
  });
});
