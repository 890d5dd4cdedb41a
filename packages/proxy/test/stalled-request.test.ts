// A request that has sent no byte to its client and is stuck on its target (past its first-byte
// deadline, or on a target that turned unhealthy) while no other target can take it waits on that
// target: and it moves the moment one can, not at limits.headersTimeoutMs (2 minutes). The replicas
// are scripted engines: one holds the request and never answers (as a frozen engine would), another
// reports a request waiting (full) until the test clears it.
import { strict as assert } from "node:assert";
import { createServer, type ServerResponse } from "node:http";
import { test } from "node:test";
import { type LbConfigInput, parseLbConfig } from "@meridian/protocol";
import { chatBody, lbConfig, listenLoopback, post, servedBy, waitFor } from "./helpers";
import { startScriptedEngine } from "./scripted-engine";
import { answeredBy, clientKeysLosingOne, closedAfterTests, LIMITS, MOVED, observedLb as observed, region, WAITS } from "./stalled-harness";

const open = closedAfterTests();
const observedLb = (config: LbConfigInput) => observed(config, open);

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

/** A request on a stalled replica, past its deadline while the other replica is full, whose client
 * key a config then revokes (keys required): it may not be moved to be refused. */
async function revokedPastDeadline(lbId: string, limits: LbConfigInput["limits"]) {
  const stalled = await startScriptedEngine("stalled", 1);
  const busy = await startScriptedEngine("busy", 1);
  open.push(stalled, busy);
  const keys = clientKeysLosingOne(true);
  const config = (version: number): LbConfigInput => ({
    ...lbConfig(
      lbId,
      region,
      [stalled, busy].map((e) => ({ id: e.id, url: e.url, region })),
      { ...LIMITS, ...(limits ? { limits } : {}), version },
    ),
    clientAuth: keys.clientAuth(version > 1),
  });
  const { lb, logs } = await observedLb(config(1));
  busy.setLoad(1, 1);
  await lb.balancer.scrapeNow();
  const reply = post(`${lb.url}/v1/chat/completions`, chatBody("revoked"), { "x-session-id": "revoked", authorization: `Bearer ${keys.leaving}` });
  await waitFor("past its deadline on the stalled replica", () => stalled.holds("revoked") && logs.some((l) => l.msg === WAITS));
  await lb.balancer.applyConfig(parseLbConfig(config(2)));
  return { stalled, busy, lb, logs, reply };
}

test("a request past its deadline whose client key was revoked since is answered by its replica, not moved to be refused", async () => {
  const { stalled, busy, lb, logs, reply } = await revokedPastDeadline("lb-revoked", undefined);
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

test("at limits.headersTimeoutMs a request whose client key was revoked since gets its 401, not counted as moved", async () => {
  const { lb, logs, reply } = await revokedPastDeadline("lb-revoked-cap", { firstByteMinMs: 200, headersTimeoutMs: 2_000 });
  // At the cap the LB stops waiting for the stalled replica, and the retry refuses the revoked key.
  assert.equal((await reply).status, 401);
  const counted = (await lb.balancer.metrics.redispatched.get()).values.filter((v) => v.value > 0);
  assert.deepEqual(counted, [], "a request refused at its retry was counted as moved");
  assert.equal(logs.filter((l) => l.msg === "no first byte within limits.headersTimeoutMs; re-dispatching").length, 0);
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
