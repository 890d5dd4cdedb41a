// A request that has sent no byte to its client and is stuck on its target (past its first-byte
// deadline, or on a target that turned unhealthy) while no other target can take it waits on that
// target: and it moves the moment one can, not at limits.headersTimeoutMs (2 minutes). The replicas
// are scripted engines: one holds the request and never answers (as a frozen engine would), another
// reports a request waiting (full) until the test clears it.
import { strict as assert } from "node:assert";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { after, test } from "node:test";
import { pino } from "pino";
import { type LbConfigInput, parseLbConfig } from "@meridian/protocol";
import { generateClientKey, sha256Hex } from "@meridian/protocol/credentials";
import type { RunningProxy } from "../src/index";
import { chatBody, lbConfig, listenLoopback, type PostResult, post, servedBy, startLb, waitFor } from "./helpers";
import { type ScriptedEngine, startScriptedEngine } from "./scripted-engine";

const open: { close(): Promise<void> }[] = [];
after(async () => {
  for (const thing of open.reverse()) await thing.close();
});

// Scrapes only when a test asks (scrapeNow): a replica set full stays full until then.
const LIMITS = {
  probes: { rttIntervalMs: 200, scrapeIntervalMs: 600_000, unhealthyAfter: 60 },
  limits: { firstByteMinMs: 200, headersTimeoutMs: 120_000 },
};
const WAITS = "first-byte deadline passed; no other target can take it yet, so it waits";
const MOVED = "no first byte within the deadline; re-dispatching";

interface Logged {
  msg: string;
  target?: string;
}

async function observedLb(config: LbConfigInput): Promise<{ lb: RunningProxy; logs: Logged[] }> {
  const logs: Logged[] = [];
  const lb = await startLb(config, { logger: pino({ level: "info" }, { write: (line: string) => void logs.push(JSON.parse(line) as Logged) }) });
  open.push(lb);
  await waitFor("every replica probed", () => [...lb.balancer.core.replicas.values()].every((r) => r.probed));
  return { lb, logs };
}

const region = "us-ashburn" as const;

/** The request of `session` reaches `engine`, which answers it: its client gets a 200 from `replicaId`. */
async function answeredBy(engine: ScriptedEngine, session: string, reply: Promise<PostResult>, replicaId: string): Promise<void> {
  await waitFor(`the request of ${session} on ${engine.id}`, () => engine.holds(session));
  engine.finish(session);
  const result = await reply;
  assert.equal(result.status, 200, result.text);
  assert.equal(servedBy(result), replicaId);
}

test("a request past its deadline while the other replica is full moves as soon as that replica can take it", async () => {
  const stalled = await startScriptedEngine("stalled", 1);
  const busy = await startScriptedEngine("busy", 1);
  open.push(stalled, busy);
  const { lb, logs } = await observedLb(
    lbConfig(
      "lb-overdue",
      region,
      [stalled, busy].map((e) => ({ id: e.id, url: e.url, region })),
      LIMITS,
    ),
  );
  busy.setLoad(1, 1);
  await lb.balancer.scrapeNow();

  const answer = post(`${lb.url}/v1/chat/completions`, chatBody("overdue"), { "x-session-id": "overdue" });
  await waitFor("the request on the stalled replica", () => stalled.holds("overdue"));
  await waitFor("its deadline passed with nowhere to go", () => logs.some((l) => l.msg === WAITS));
  assert.equal(busy.holds("overdue"), false, "it moved to a full replica");

  // The busy replica's queue empties: the next scrape shows it, and the request moves at once.
  busy.setLoad(0, 0);
  await lb.balancer.scrapeNow();
  await answeredBy(busy, "overdue", answer, "busy");
  assert.deepEqual(
    logs.filter((l) => l.msg === MOVED).map((l) => l.target),
    ["stalled"],
  );
});

test("at limits.headersTimeoutMs a request that no target could take moves to the hold queue, logged and counted", async () => {
  const stalled = await startScriptedEngine("stalled", 1);
  const busy = await startScriptedEngine("busy", 1);
  open.push(stalled, busy);
  const { lb, logs } = await observedLb(
    lbConfig(
      "lb-capped",
      region,
      [stalled, busy].map((e) => ({ id: e.id, url: e.url, region })),
      { ...LIMITS, limits: { firstByteMinMs: 200, headersTimeoutMs: 1_000 } },
    ),
  );
  busy.setLoad(1, 1);
  await lb.balancer.scrapeNow();
  const answer = post(`${lb.url}/v1/chat/completions`, chatBody("capped"), { "x-session-id": "capped" });
  await waitFor("the request on the stalled replica", () => stalled.holds("capped"));
  await waitFor("held at the cap, the busy replica still full", () => lb.balancer.core.queue.length === 1);
  assert.ok(logs.some((l) => l.msg === "no first byte within limits.headersTimeoutMs; re-dispatching" && l.target === "stalled"));
  const counted = (await lb.balancer.metrics.redispatched.get()).values.filter((v) => v.labels.replica === "stalled");
  assert.deepEqual(
    counted.filter((v) => v.value > 0).map((v) => [v.labels.reason, v.value]),
    [["headers_timeout", 1]],
  );
  busy.setLoad(0, 0);
  await lb.balancer.scrapeNow();
  await answeredBy(busy, "capped", answer, "busy");
});

test("a request past its deadline moves to the engine its replica is re-pointed to, the operator's fix for a stuck engine", async () => {
  const stuck = await startScriptedEngine("stuck", 1);
  const replacement = await startScriptedEngine("replacement", 1);
  open.push(stuck, replacement);
  const config = lbConfig("lb-repoint", region, [{ id: "a", url: stuck.url, region }], LIMITS);
  const { lb, logs } = await observedLb(config);
  const answer = post(`${lb.url}/v1/chat/completions`, chatBody("repointed"), { "x-session-id": "repointed" });
  await waitFor("its deadline passed on the stuck engine", () => stuck.holds("repointed") && logs.some((l) => l.msg === WAITS));
  await lb.balancer.applyConfig(parseLbConfig(lbConfig("lb-repoint", region, [{ id: "a", url: replacement.url, region }], { ...LIMITS, version: 2 })));
  await answeredBy(replacement, "repointed", answer, "a");
});

/** An engine that holds every chat request; its /health answers 503 once `sick`. */
async function sickeningEngine() {
  const state = { sick: false, held: [] as ServerResponse[] };
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.url === "/health") {
        res.statusCode = state.sick ? 503 : 200;
        res.end(state.sick ? "" : '{"status":"ok"}');
      } else if (req.url === "/metrics") res.end("");
      else state.held.push(res);
    });
  });
  return { state, ...(await listenLoopback(server)) };
}

test("a request on a replica that turns unhealthy with nowhere to go moves once a replica appears", async () => {
  const dying = await sickeningEngine();
  const added = await startScriptedEngine("added", 1);
  open.push(dying, added);
  const extra = { ...LIMITS, probes: { rttIntervalMs: 100, scrapeIntervalMs: 600_000, unhealthyAfter: 2 } };
  const a = { id: "a", url: dying.url, region };
  const { lb } = await observedLb(lbConfig("lb-stranded", region, [a], extra));
  // Not streamed, no max_tokens: its first-byte deadline is the cap, so only its replica's health moves it.
  const { max_tokens: _unbounded, ...body } = chatBody("stranded");
  const answer = post(`${lb.url}/v1/chat/completions`, body, { "x-session-id": "stranded" });
  await waitFor("the request held by a", () => dying.state.held.length === 1);
  dying.state.sick = true;
  await waitFor("a unhealthy", () => lb.balancer.core.replicas.get("a")?.healthy === false);
  await lb.balancer.applyConfig(parseLbConfig(lbConfig("lb-stranded", region, [a, { id: "added", url: added.url, region }], { ...extra, version: 2 })));
  await answeredBy(added, "stranded", answer, "added");
});

test("a request on a replica that turned unhealthy moves at once when the operator replaces that replica", async () => {
  const dying = await sickeningEngine();
  const replacement = await startScriptedEngine("replacement", 1);
  open.push(dying, replacement);
  const extra = { ...LIMITS, probes: { rttIntervalMs: 100, scrapeIntervalMs: 600_000, unhealthyAfter: 2 } };
  const { lb, logs } = await observedLb(lbConfig("lb-replaced", region, [{ id: "a", url: dying.url, region }], extra));
  const { max_tokens: _unbounded, ...body } = chatBody("replaced");
  const answer = post(`${lb.url}/v1/chat/completions`, body, { "x-session-id": "replaced" });
  await waitFor("the request held by a", () => dying.state.held.length === 1);
  dying.state.sick = true;
  await waitFor("it waits on a, unhealthy", () => logs.some((l) => l.msg === "replica turned unhealthy; no other target can take it yet, so it waits"));
  // a leaves the config: the engine it stood for is not watched any more, and stays down.
  await lb.balancer.applyConfig(parseLbConfig(lbConfig("lb-replaced", region, [{ id: "b", url: replacement.url, region }], { ...extra, version: 2 })));
  await answeredBy(replacement, "replaced", answer, "b");
});

/** A peer LB with `available` replicas, less those the forwards it holds take (or failing its polls
 * once `answersPolls` is false); it counts the forwards it gets and holds them. */
async function reportingPeer(lbId = "lb-eu", peerRegion = "eu-frankfurt") {
  const state = { available: 0, reports: 0, answersPolls: true, forwards: [] as { req: IncomingMessage; res: ServerResponse }[] };
  const server = createServer((req, res) => {
    if (req.url?.startsWith("/admin/peer")) {
      if (!state.answersPolls) {
        res.statusCode = 503;
        res.end();
        return;
      }
      state.reports++;
      res.writeHead(200, { "content-type": "application/json" });
      const report = { lbId, region: peerRegion, time: Date.now(), configVersion: 1, replicas: [], queueLength: 0 };
      // As a real peer does: a forward it holds takes one of its free replicas.
      res.end(JSON.stringify({ schema: "meridian.peer-report/1", ...report, availableReplicas: Math.max(0, state.available - state.forwards.length) }));
      return;
    }
    req.resume();
    req.on("end", () => state.forwards.push({ req, res }));
  });
  return { state, ...(await listenLoopback(server)) };
}

/** Answers a request the test's fake engine or peer holds with a minimal completion. */
function answer(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(
    JSON.stringify({
      id: "x",
      object: "chat.completion",
      created: 0,
      model: "m",
      choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
    }),
  );
}

test("of the requests past their deadline, one goes to the peer's one free replica and the others stay and are answered", async () => {
  const stalled = await startScriptedEngine("stalled", 1);
  const busy = await startScriptedEngine("busy", 1);
  const peer = await reportingPeer();
  open.push(stalled, busy, peer);
  const config = lbConfig(
    "lb-us",
    region,
    [stalled, busy].map((e) => ({ id: e.id, url: e.url, region })),
    {
      ...LIMITS,
      crossRegion: "via-peer",
      peers: [{ id: "lb-eu", url: peer.url, region: "eu-frankfurt", credentialHashes: [] }],
    },
  );
  // The peer reports one free replica from the start. Every request's deadline passes before its
  // next report: each would read that report alone as room.
  peer.state.available = 1;
  const { lb, logs } = await observedLb(config);
  await waitFor("the peer polled", () => lb.balancer.core.peers.get("lb-eu")?.report);
  busy.setLoad(1, 1);
  await lb.balancer.scrapeNow();
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
  // The local replica frees: the request comes home then, not at limits.headersTimeoutMs (2 minutes).
  busy.setLoad(0, 0);
  await lb.balancer.scrapeNow();
  await answeredBy(busy, "away", reply, "busy");
  await waitFor("the forward abandoned at the peer", () => peer.state.forwards[0]!.req.destroyed);
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
      ...LIMITS,
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
});

test("a request with no try left is not said to wait for another target: at the cap it gets its 504", async () => {
  // Two engines: the first refuses (503), the second holds the retry past its deadline and the cap.
  let chats = 0;
  const held: ServerResponse[] = [];
  const engine = () =>
    listenLoopback(
      createServer((req, res) => {
        req.resume();
        req.on("end", () => {
          if (req.url === "/health") return void res.end('{"status":"ok"}');
          if (req.url === "/metrics") return void res.end("");
          if (chats++ === 0) {
            res.statusCode = 503;
            return void res.end('{"error":{"message":"busy"}}');
          }
          held.push(res);
        });
      }),
    );
  const first = await engine();
  const second = await engine();
  open.push(first, second);
  const { lb, logs } = await observedLb(
    lbConfig(
      "lb-last-try",
      region,
      [
        { id: "e1", url: first.url, region },
        { id: "e2", url: second.url, region },
      ],
      {
        policy: "round-robin",
        probes: { rttIntervalMs: 100, scrapeIntervalMs: 600_000, unhealthyAfter: 60 },
        limits: { firstByteMinMs: 200, headersTimeoutMs: 1_500 },
      },
    ),
  );
  const result = await post(`${lb.url}/v1/chat/completions`, chatBody("last try", { stream: true }), { "x-session-id": "last try" });
  assert.equal(held.length, 1, "the retry was not held by the second engine");
  assert.equal(result.status, 504, result.text);
  assert.deepEqual(
    logs.filter((l) => l.msg === WAITS),
    [],
  );
});

test("a request past its deadline whose client key was revoked since is answered by its replica, not moved to be refused", async () => {
  const stalled = await startScriptedEngine("stalled", 1);
  const busy = await startScriptedEngine("busy", 1);
  open.push(stalled, busy);
  const revoked = generateClientKey("0123456789ab");
  const kept = generateClientKey("ba9876543210");
  const entry = (id: string, key: string, name: string) => ({ id, name, region, sha256: sha256Hex(key) });
  const config = (version: number, keys: ReturnType<typeof entry>[]): LbConfigInput => ({
    ...lbConfig(
      "lb-revoked",
      region,
      [stalled, busy].map((e) => ({ id: e.id, url: e.url, region })),
      { ...LIMITS, version },
    ),
    clientAuth: { required: true, keys },
  });
  const { lb, logs } = await observedLb(config(1, [entry("0123456789ab", revoked, "leaver"), entry("ba9876543210", kept, "stayer")]));
  busy.setLoad(1, 1);
  await lb.balancer.scrapeNow();
  const reply = post(`${lb.url}/v1/chat/completions`, chatBody("revoked"), { "x-session-id": "revoked", authorization: `Bearer ${revoked}` });
  await waitFor("past its deadline on the stalled replica", () => stalled.holds("revoked") && logs.some((l) => l.msg === WAITS));
  await lb.balancer.applyConfig(parseLbConfig(config(2, [entry("ba9876543210", kept, "stayer")])));
  // The busy replica frees: the drain after this scrape asks the request again, and it stays.
  busy.setLoad(0, 0);
  await lb.balancer.scrapeNow();
  assert.deepEqual(
    logs.filter((l) => l.msg === MOVED),
    [],
  );
  stalled.finish("revoked");
  const result = await reply;
  assert.equal(result.status, 200, result.text);
  assert.equal(servedBy(result), "stalled");
});

/** A stuck engine (it holds what it is sent) beside a full one, behind an LB whose
 * limits.headersTimeoutMs `lowerCap` brings down, for the cap tests. */
async function stuckBesideFull(lbId: string) {
  const stuck = await startScriptedEngine("stuck", 1);
  const busy = await startScriptedEngine("busy", 1);
  open.push(stuck, busy);
  const config = (version: number, headersTimeoutMs: number) =>
    lbConfig(
      lbId,
      region,
      [stuck, busy].map((e) => ({ id: e.id, url: e.url, region })),
      { ...LIMITS, version, limits: { ...LIMITS.limits, headersTimeoutMs } },
    );
  const { lb, logs } = await observedLb(config(1, 120_000));
  busy.setLoad(1, 1);
  await lb.balancer.scrapeNow();
  const lowerCap = (headersTimeoutMs: number) => lb.balancer.applyConfig(parseLbConfig(config(2, headersTimeoutMs)));
  return { stuck, busy, lb, logs, lowerCap };
}

test("a request past its deadline leaves its replica once a config lowers limits.headersTimeoutMs below its wait", async () => {
  const { stuck, busy, lb, logs, lowerCap } = await stuckBesideFull("lb-cap");
  const reply = post(`${lb.url}/v1/chat/completions`, chatBody("cap"), { "x-session-id": "cap" });
  await waitFor("past its deadline on the stuck replica", () => stuck.holds("cap") && logs.some((l) => l.msg === WAITS));
  // 1 s: it leaves once it has waited that long (a drain follows every probe, every 200 ms).
  await lowerCap(1_000);
  // At the cap it leaves for the hold queue (no replica can take it), and the busy one frees.
  await waitFor("the request held", () => lb.balancer.core.queue.length === 1);
  busy.setLoad(0, 0);
  await lb.balancer.scrapeNow();
  await answeredBy(busy, "cap", reply, "busy");
});

test("a request not yet past its deadline leaves a stuck replica once a config lowers limits.headersTimeoutMs below its wait", async () => {
  const { stuck, busy, lb, logs, lowerCap } = await stuckBesideFull("lb-cap-unstalled");
  // Not streamed, no max_tokens: its first-byte deadline is the cap itself, 2 minutes.
  const { max_tokens: _unbounded, ...body } = chatBody("unstalled");
  const reply = post(`${lb.url}/v1/chat/completions`, body, { "x-session-id": "unstalled" });
  await waitFor("the request on the stuck replica", () => stuck.holds("unstalled"));
  busy.setLoad(0, 0);
  await lb.balancer.scrapeNow();
  await lowerCap(1_000);
  await answeredBy(busy, "unstalled", reply, "busy");
  assert.deepEqual(
    logs.filter((l) => l.msg === MOVED).map((l) => l.target),
    ["stuck"],
  );
});
