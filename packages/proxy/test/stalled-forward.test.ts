// A request that has sent no byte to its client, stuck on a target while a peer LB is in play: moved
// past its first-byte deadline only to a peer whose free replica no forward has taken (what the
// peer's report cannot show yet), a forward the peer holds brought home once a local replica frees,
// and a request on a peer that stops answering moved as soon as somewhere can take it.
import { strict as assert } from "node:assert";
import { request as httpRequest } from "node:http";
import { test } from "node:test";
import { type LbConfigInput, parseLbConfig } from "@meridian/protocol";
import { coreNow } from "../src/core-clock";
import { chatBody, lbConfig, post, waitFor } from "./helpers";
import { startScriptedEngine } from "./scripted-engine";
import {
  answer,
  answeredBy,
  clientKeysLosingOne,
  closedAfterTests,
  LIMITS,
  MOVED,
  observedLb as observed,
  region,
  reportingPeer,
  WAITS,
} from "./stalled-harness";

const open = closedAfterTests();
const observedLb = (config: LbConfigInput) => observed(config, open);

/** A stalled and a busy engine (full once polled) and lb-eu reporting `available` free replicas,
 * behind an LB in via-peer mode under `limits`, once it has polled lb-eu. */
async function stalledBusyAndPeer(limits: LbConfigInput["limits"], available: number) {
  const stalled = await startScriptedEngine("stalled", 1);
  const busy = await startScriptedEngine("busy", 1);
  const peer = await reportingPeer();
  open.push(stalled, busy, peer);
  peer.state.available = available;
  const peers = [{ id: "lb-eu", url: peer.url, region: "eu-frankfurt", credentialHashes: [] }];
  const engines = [stalled, busy].map((e) => ({ id: e.id, url: e.url, region }));
  const { lb, logs } = await observedLb(lbConfig("lb-us", region, engines, { probes: LIMITS.probes, limits, crossRegion: "via-peer", peers }));
  await waitFor("the peer polled", () => lb.balancer.core.peers.get("lb-eu")?.report);
  busy.setLoad(1, 1);
  await lb.balancer.scrapeNow();
  return { stalled, busy, peer, lb, logs };
}

test("of the requests past their deadline, one goes to the peer's one free replica and the others stay and are answered", async () => {
  // The peer reports one free replica from the start. Every request's deadline passes before its
  // next report: each would read that report alone as room.
  const { stalled, peer, lb, logs } = await stalledBusyAndPeer(LIMITS.limits, 1);
  const sessions = ["h0", "h1", "h2", "h3"];
  const answers = sessions.map((s) => post(`${lb.url}/v1/chat/completions`, chatBody(s), { "x-session-id": s }));
  await waitFor("one forwarded to the peer", () => peer.state.forwards.length === 1);
  await waitFor("the other three past their deadline on the stalled replica", () => logs.filter((l) => l.msg === WAITS).length === 3);
  // Its reports now show the replica taken; the drains after them ask the three again.
  const reports = peer.state.reports;
  await waitFor("two more reports", () => peer.state.reports >= reports + 2);
  await lb.balancer.pollPeersNow();
  assert.equal(peer.state.forwards.length, 1, "requests that their replica may still answer were sent after one free replica");
  answer(peer.state.forwards[0]!.res);
  for (const s of sessions) if (stalled.holds(s)) stalled.finish(s);
  for (const result of await Promise.all(answers)) assert.equal(result.status, 200, result.text);
});

test("past its deadline, a request goes to the peer whose free replica no forward has taken since its report", async () => {
  const stalled = await startScriptedEngine("stalled", 1);
  const eu = await reportingPeer("lb-eu", "eu-frankfurt");
  const seoul = await reportingPeer("lb-ap", "ap-seoul");
  open.push(stalled, eu, seoul);
  const config = lbConfig("lb-us", region, [{ id: stalled.id, url: stalled.url, region }], {
    ...LIMITS,
    crossRegion: "via-peer",
    peers: [
      { id: "lb-eu", url: eu.url, region: "eu-frankfurt", credentialHashes: [] },
      { id: "lb-ap", url: seoul.url, region: "ap-seoul", credentialHashes: [] },
    ],
  });
  const { lb, logs } = await observedLb(config);
  await waitFor("both peers polled, nothing free", () => lb.balancer.core.peers.get("lb-eu")?.report && lb.balancer.core.peers.get("lb-ap")?.report);
  const overdue = post(`${lb.url}/v1/chat/completions`, chatBody("overdue"), { "x-session-id": "overdue" });
  await waitFor("its deadline passed with nowhere to go", () => stalled.holds("overdue") && logs.some((l) => l.msg === WAITS));
  stalled.setLoad(1, 1);
  await lb.balancer.scrapeNow();
  const held = post(`${lb.url}/v1/chat/completions`, chatBody("held"), { "x-session-id": "held" });
  await waitFor("the second request held", () => lb.balancer.core.queue.length === 1);
  // Each peer now has one free replica. The first report to come in sends the held request to that
  // peer; the overdue one must not follow it there, where its replica is taken: it goes to the other.
  eu.state.available = 1;
  seoul.state.available = 1;
  await lb.balancer.pollPeersNow();
  await waitFor("both requests forwarded", () => eu.state.forwards.length + seoul.state.forwards.length === 2);
  assert.deepEqual([eu.state.forwards.length, seoul.state.forwards.length], [1, 1], "both went to one peer's one free replica");
  for (const peer of [eu, seoul]) answer(peer.state.forwards[0]!.res);
  for (const result of await Promise.all([overdue, held])) assert.equal(result.status, 200, result.text);
});

test("a forward that its peer holds past what its forwards take comes home as soon as a local replica can take it", async () => {
  const busy = await startScriptedEngine("busy", 1);
  const peer = await reportingPeer();
  open.push(busy, peer);
  peer.state.available = 1;
  const config = lbConfig("lb-us", region, [{ id: busy.id, url: busy.url, region }], {
    ...LIMITS,
    crossRegion: "via-peer",
    peers: [{ id: "lb-eu", url: peer.url, region: "eu-frankfurt", credentialHashes: [] }],
  });
  const { lb, logs } = await observedLb(config);
  await waitFor("the peer polled", () => lb.balancer.core.peers.get("lb-eu")?.report);
  busy.setLoad(1, 1);
  await lb.balancer.scrapeNow();
  // The peer takes the forward and never answers it (its replica hung, say), while its polls still answer.
  const reply = post(`${lb.url}/v1/chat/completions`, chatBody("away"), { "x-session-id": "away" });
  await waitFor("the request forwarded to lb-eu", () => peer.state.forwards.length === 1);
  await waitFor("its deadline passed with nowhere to go", () => logs.some((l) => l.msg === WAITS && l.target === "lb-eu"));
  // Its series exists before the first move, so that move shows in increase().
  const movedOff = async () =>
    (await lb.balancer.metrics.redispatched.get()).values.find((v) => v.labels.replica === "peer:lb-eu" && v.labels.reason === "first_byte_deadline")?.value;
  assert.equal(await movedOff(), 0);
  // The local replica frees: the request comes home then, not at limits.headersTimeoutMs (2 minutes).
  busy.setLoad(0, 0);
  await lb.balancer.scrapeNow();
  await answeredBy(busy, "away", reply, "busy");
  await waitFor("the forward abandoned at the peer", () => peer.state.forwards[0]!.req.destroyed);
  assert.equal(await movedOff(), 1);
  assert.deepEqual(
    logs.filter((l) => l.msg === MOVED).map((l) => l.target),
    ["lb-eu"],
  );
});

test("a request on a peer that stopped answering moves at once when the operator re-points that peer", async () => {
  const disabled = await startScriptedEngine("disabled", 1);
  const gone = await reportingPeer();
  const working = await reportingPeer();
  open.push(disabled, gone, working);
  gone.state.available = 1;
  working.state.available = 1;
  const config = (peerUrl: string, version: number): LbConfigInput => {
    const base = lbConfig("lb-us", region, [{ id: disabled.id, url: disabled.url, region }], {
      ...LIMITS,
      probes: { rttIntervalMs: 200, scrapeIntervalMs: 600_000, unhealthyAfter: 2 },
      crossRegion: "via-peer",
      peers: [{ id: "lb-eu", url: peerUrl, region: "eu-frankfurt", credentialHashes: [] }],
      version,
    });
    // Its one replica disabled: only the peer serves the model.
    return { ...base, replicas: (base.replicas ?? []).map((r) => ({ ...r, state: "disabled" as const })) };
  };
  const { lb, logs } = await observedLb(config(gone.url, 1));
  await waitFor("the peer polled", () => lb.balancer.core.peers.get("lb-eu")?.report);
  const reply = post(`${lb.url}/v1/chat/completions`, chatBody("forwarded"), { "x-session-id": "forwarded" });
  await waitFor("the request forwarded to lb-eu", () => gone.state.forwards.length === 1);
  gone.state.answersPolls = false;
  await waitFor(
    "it waits on lb-eu, unhealthy",
    () => logs.some((l) => l.msg === "peer turned unhealthy; no other target can take it yet, so it waits"),
    10_000,
  );
  await lb.balancer.applyConfig(parseLbConfig(config(working.url, 2)));
  await waitFor("the request forwarded to the re-pointed lb-eu", () => working.state.forwards.length === 1);
  answer(working.state.forwards[0]!.res);
  const result = await reply;
  assert.equal(result.status, 200, result.text);
});

test("a peer removed and put back under its URL (a failover flap) is the same LB: a request on it moves when it stops answering", async () => {
  const disabled = await startScriptedEngine("disabled", 1);
  const eu = await reportingPeer("lb-eu", "eu-frankfurt");
  const seoul = await reportingPeer("lb-ap", "ap-seoul");
  open.push(disabled, eu, seoul);
  eu.state.available = 1;
  seoul.state.available = 1;
  const peerEu = { id: "lb-eu", url: eu.url, region: "eu-frankfurt", credentialHashes: [] };
  const peerAp = { id: "lb-ap", url: seoul.url, region: "ap-seoul", credentialHashes: [] };
  const config = (peers: LbConfigInput["peers"], version: number): LbConfigInput => {
    const base = lbConfig("lb-us", region, [{ id: disabled.id, url: disabled.url, region }], {
      // A first-byte deadline far off: the forward moves because lb-eu stops answering, not at its deadline.
      limits: { firstByteMinMs: 60_000, headersTimeoutMs: 120_000 },
      probes: { rttIntervalMs: 200, scrapeIntervalMs: 600_000, unhealthyAfter: 2 },
      crossRegion: "via-peer",
      peers,
      version,
    });
    return { ...base, replicas: (base.replicas ?? []).map((r) => ({ ...r, state: "disabled" as const })) };
  };
  const { lb } = await observedLb(config([peerEu], 1));
  await waitFor("lb-eu polled", () => lb.balancer.core.peers.get("lb-eu")?.report);
  const reply = post(`${lb.url}/v1/chat/completions`, chatBody("flap"), { "x-session-id": "flap" });
  await waitFor("the request forwarded to lb-eu", () => eu.state.forwards.length === 1);
  await lb.balancer.applyConfig(parseLbConfig(config([], 2)));
  await lb.balancer.applyConfig(parseLbConfig(config([peerEu, peerAp], 3)));
  await waitFor("both peers polled", () => lb.balancer.core.peers.get("lb-eu")?.report && lb.balancer.core.peers.get("lb-ap")?.report);
  eu.state.answersPolls = false;
  // Its report goes stale: the request moves then, once, not at limits.headersTimeoutMs (2 minutes).
  await waitFor("the request forwarded to lb-ap", () => seoul.state.forwards.length === 1, 10_000);
  answer(seoul.state.forwards[0]!.res);
  assert.equal((await reply).status, 200);
  assert.equal(eu.state.forwards.length, 1, "sent to lb-eu twice");
  const moved = (await lb.balancer.metrics.redispatched.get()).values.filter((v) => v.value > 0).map((v) => [v.labels.replica, v.labels.reason, v.value]);
  assert.deepEqual(moved, [["peer:lb-eu", "peer_unhealthy", 1]]);
});

/** One local engine and lb-eu, which reports a free replica (its region requiring client keys when
 * `peerRequiresKeys`), behind an LB whose client keys are `keysRequired`; `dropKey` pushes a config
 * without the client's key (revoking it where keys are required). */
async function besidePeerLosingKey(engineId: string, options: { keysRequired: boolean; peerRequiresKeys: boolean }) {
  const engine = await startScriptedEngine(engineId, 1);
  const peer = await reportingPeer();
  peer.state.available = 1;
  peer.state.clientKeysRequired = options.peerRequiresKeys;
  open.push(engine, peer);
  const keys = clientKeysLosingOne(options.keysRequired);
  const config = (version: number): LbConfigInput => ({
    ...lbConfig("lb-us", region, [{ id: engine.id, url: engine.url, region }], {
      ...LIMITS,
      crossRegion: "via-peer",
      peers: [{ id: "lb-eu", url: peer.url, region: "eu-frankfurt", credentialHashes: [] }],
      version,
    }),
    clientAuth: keys.clientAuth(version > 1),
  });
  const { lb, logs } = await observedLb(config(1));
  await waitFor("the peer polled", () => lb.balancer.core.peers.get("lb-eu")?.report);
  return { engine, peer, keys, lb, logs, dropKey: () => lb.balancer.applyConfig(parseLbConfig(config(2))) };
}

test("a request whose client key a config dropped is not moved past its deadline to a peer that requires keys", async () => {
  // Keys not required: a key the config drops goes on as anonymous, which lb-eu does not take.
  const { engine: stalled, peer, keys, lb, logs, dropKey } = await besidePeerLosingKey("stalled", { keysRequired: false, peerRequiresKeys: true });
  const reply = post(`${lb.url}/v1/chat/completions`, chatBody("dropped"), { "x-session-id": "dropped", authorization: `Bearer ${keys.leaving}` });
  await waitFor("on the local replica", () => stalled.holds("dropped"));
  await dropKey();
  // Past its deadline it stays: lb-eu, the only other target, would not take it as it now comes.
  await waitFor("its deadline passed with nowhere to go", () => logs.some((l) => l.msg === WAITS));
  await answeredBy(stalled, "dropped", reply, "stalled");
  assert.equal(peer.state.forwards.length, 0);
  assert.deepEqual(
    logs.filter((l) => l.msg === MOVED),
    [],
  );
});

test("a forward whose key was revoked, refused 401 when its peer goes down, is not counted as moved", async () => {
  const { engine: busy, peer, keys, lb, dropKey } = await besidePeerLosingKey("busy", { keysRequired: true, peerRequiresKeys: false });
  busy.setLoad(1, 1);
  await lb.balancer.scrapeNow();
  const reply = post(`${lb.url}/v1/chat/completions`, chatBody("k"), { "x-session-id": "k", authorization: `Bearer ${keys.leaving}` });
  await waitFor("forwarded", () => peer.state.forwards.length === 1);
  await dropKey();
  peer.state.answersPolls = false;
  const result = await reply;
  const counted = (await lb.balancer.metrics.redispatched.get()).values.filter((v) => v.value > 0).map((v) => ({ ...v.labels, value: v.value }));
  assert.equal(result.status, 401);
  assert.deepEqual(counted, [], "a request refused at its retry was counted as moved");
});

test("a forward still waiting in this LB's pool for a connection to the peer keeps counting against the peer's free replicas", async () => {
  // One connection per target: a second forward waits here for the first's.
  const { stalled, peer, lb, logs } = await stalledBusyAndPeer({ ...LIMITS.limits, maxConnectionsPerReplica: 1 }, 0);
  // R is on the one replica with room, which does not answer: past its deadline, nowhere to go.
  const r = post(`${lb.url}/v1/chat/completions`, chatBody("R"), { "x-session-id": "R" });
  await waitFor("R past its deadline on stalled", () => stalled.holds("R") && logs.some((l) => l.msg === WAITS));
  stalled.setLoad(1, 1);
  await lb.balancer.scrapeNow();
  // A and B are held, then the peer reports 2 free replicas: both are forwarded, B waits for A's connection.
  const a = post(`${lb.url}/v1/chat/completions`, chatBody("A"), { "x-session-id": "A" });
  const b = post(`${lb.url}/v1/chat/completions`, chatBody("B"), { "x-session-id": "B" });
  await waitFor("A and B held", () => lb.balancer.core.queue.length === 2);
  peer.state.available = 2;
  await waitFor("A at the peer, B forwarded", () => peer.state.forwards.length === 1 && lb.balancer.core.queue.length === 0);
  // The peer's reports now say 1 free replica: the one B will take, which no report can show yet.
  const reports = peer.state.reports;
  await waitFor("two more reports", () => peer.state.reports >= reports + 2);
  await lb.balancer.pollPeersNow();
  const view = lb.balancer.core.peers.get("lb-eu")?.peerView(coreNow(), lb.balancer.core.peerPollIntervalMs, { model: null, clientKeyed: false }, true);
  assert.equal(view?.availableReplicas, 0, "the replica the waiting forward B will take counted free");
  assert.deepEqual(
    logs.filter((l) => l.msg === MOVED),
    [],
    "R moved to the peer",
  );
  await answeredBy(stalled, "R", r, "stalled");
  answer(peer.state.forwards[0]!.res);
  await waitFor("B at the peer", () => peer.state.forwards.length === 2);
  answer(peer.state.forwards[1]!.res);
  for (const result of await Promise.all([a, b])) assert.equal(result.status, 200, result.text);
});

test("a key dropped while its request's body arrives is not forwarded as keyed to a peer that requires keys", async () => {
  const { engine: busy, peer, keys, lb, dropKey } = await besidePeerLosingKey("busy", { keysRequired: false, peerRequiresKeys: true });
  busy.setLoad(1, 1);
  await lb.balancer.scrapeNow();
  // The headers (and the key) go first; the push that drops the key lands before the body's end.
  const body = Buffer.from(JSON.stringify(chatBody("mid")));
  const url = new URL(`${lb.url}/v1/chat/completions`);
  const headers = { "content-type": "application/json", "content-length": String(body.length), "x-session-id": "mid", authorization: `Bearer ${keys.leaving}` };
  const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers });
  const status = new Promise<number>((resolve, reject) => {
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
  });
  // Observed at the LB: the request was admitted (its key checked) and its body is being read.
  const balancer = lb.balancer;
  const handle = balancer.handleInference.bind(balancer);
  const reading = new Promise<void>((resolve) => {
    balancer.handleInference = (...args) => {
      resolve();
      return handle(...args);
    };
  });
  req.write(body.subarray(0, 10));
  await reading;
  await dropKey();
  req.end(body.subarray(10));
  // Anonymous now, it may not go to lb-eu: it waits here for the full replica.
  await waitFor("the request held", () => lb.balancer.core.queue.length === 1);
  assert.equal(peer.state.forwards.length, 0, "forwarded as keyed to a region that requires keys");
  busy.setLoad(0, 0);
  await lb.balancer.scrapeNow();
  await waitFor("on busy", () => busy.holds("mid"));
  busy.finish("mid");
  assert.equal(await status, 200);
});
