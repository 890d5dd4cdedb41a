// What the index learns from a response's 2xx headers when the config changed while the request was
// in flight: the target the request went to is no longer the one configured under that id (removed,
// or re-pointed at a new URL: a new, empty engine), so nothing is learned for it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { traceBlockKeys } from "@meridian/routing";
import { parseLbConfig, type LbConfigInput } from "@meridian/protocol";
import { LbCore } from "./lb-core";

const TPB = 512;
const keys = traceBlockKeys(Array.from({ length: 10 }, (_, i) => 7_000 + i));
const replica = (id: string, url = `http://${id}.test/`, region = "us") => ({ id, url, region, model: "m" });
const config = (version: number, extra: Partial<LbConfigInput>) =>
  parseLbConfig({ schema: "meridian.lb-config/1", version, lbId: "lb-us", region: "us", policy: "prefix-cache", replicas: [replica("a")], ...extra });

function core(extra: Partial<LbConfigInput> = {}) {
  const lb = new LbCore<string>({ config: config(1, extra), seed: 1, peerPollIntervalMs: 1_000, cacheModel: "learned" });
  for (const id of lb.replicas.keys()) lb.probeSucceeded(id, 1);
  return lb;
}
const admit = (lb: LbCore<string>) => lb.admit("r", { keys, sessionKey: "s", model: null, hop: 0, inputTokens: 10 * TPB, tokensPerBlock: TPB }, 0);
const depthOn = (lb: LbCore<string>, id: string, now: number) => lb.index.match(keys, now, [id]).depthByReplica.get(id) ?? 0;

describe("learning at 2xx headers after a config change", () => {
  it("the replica still configured learns the prompt (control)", () => {
    const lb = core();
    const ticket = admit(lb);
    assert.equal(lb.route(ticket, 0).kind, "replica");
    lb.applyConfig(config(2, { replicas: [replica("a")], policy: "least-request" })); // same URL: same engine
    const learn = lb.headersReceived(ticket, 200, 10);
    if (learn) lb.learn(learn, 10);
    assert.equal(depthOn(lb, "a", 20), keys.length);
  });

  it("the old engine's headers do not credit the new engine behind a changed URL with the prompt", () => {
    const lb = core();
    const ticket = admit(lb);
    assert.equal(lb.route(ticket, 0).kind, "replica");
    lb.applyConfig(config(2, { replicas: [replica("a", "http://new.test/")] }));
    lb.probeSucceeded("a", 1);
    assert.equal(lb.headersReceived(ticket, 200, 10), null);
    assert.equal(depthOn(lb, "a", 20), 0, "a request to the new engine would be predicted a cache hit it does not have");
  });

  it("a replica removed while the request was in flight gets no routes from its headers", () => {
    const lb = core();
    const ticket = admit(lb);
    lb.route(ticket, 0);
    lb.applyConfig(config(2, { replicas: [replica("b")] }));
    const learn = lb.headersReceived(ticket, 200, 10);
    if (learn) lb.learn(learn, 10);
    assert.equal(lb.index.stats().routes, 0);
  });

  it("a peer removed while the forward was in flight gets no routes in the peer index", () => {
    const peers = [{ id: "lb-eu", url: "http://eu.test/", region: "eu" }];
    const lb = core({ crossRegion: "via-peer", policy: "least-request", replicas: [replica("a"), replica("e", undefined, "eu")], peers });
    lb.scrapeSucceeded("a", { running: 1, waiting: 1, usedTokens: 0 }, 0);
    const report = { lbId: "lb-eu", region: "eu", time: 0, configVersion: 1, replicas: [], queueLength: 0, availableReplicas: 1 };
    lb.peerReported("lb-eu", report, 80, 0);
    const ticket = admit(lb);
    const placement = lb.route(ticket, 0);
    assert.ok(placement.kind === "peer" && placement.peerId === "lb-eu", JSON.stringify(placement));
    lb.applyConfig(config(2, { crossRegion: "via-peer", policy: "least-request", replicas: [replica("a"), replica("e", undefined, "eu")], peers: [] }));
    const learn = lb.headersReceived(ticket, 200, 10);
    if (learn) lb.learn(learn, 10);
    assert.equal(lb.peerIndex.stats().routes, 0);
  });
});
