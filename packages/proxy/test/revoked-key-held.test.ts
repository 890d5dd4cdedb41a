// A client key revoked by a config push reaches the requests of that key still held in the LB's
// queue: they are refused with the 401 a new request with the key gets, and never reach a replica.
// Before, they were dispatched once a slot freed (for up to queueMaxWaitMs after the revocation). A
// request already dispatched finishes.
import { strict as assert } from "node:assert";
import { after, test } from "node:test";
import type { LbConfigInput, LbState } from "@meridian/protocol";
import { generateClientKey, sha256Hex } from "@meridian/protocol/credentials";
import { adminGet, adminPutConfig, chatBody, completionJson, lbConfig, MODEL, post, startHoldingEngine, startLb, waitFor } from "./helpers";

const REVOKED = generateClientKey("0123456789ab");
const KEPT = generateClientKey("ba9876543210");
const entry = (id: string, key: string, name: string) => ({ id, name, region: "us-ashburn", sha256: sha256Hex(key) });

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

test("held requests of a key a config push revokes get its 401; the one in flight finishes", async () => {
  const engine = await startHoldingEngine("us-x", "us-ashburn");
  cleanups.push(() => engine.close());
  const config: LbConfigInput = lbConfig("lb-us", "us-ashburn", [], {
    replicas: [{ id: "us-x", url: engine.url, region: "us-ashburn", model: MODEL, engine: "sglang", maxConcurrency: 1 }],
    clientAuth: { required: true, keys: [entry("0123456789ab", REVOKED, "leaver"), entry("ba9876543210", KEPT, "stayer")] },
  });
  const lb = await startLb(config);
  cleanups.push(() => lb.close());
  await waitFor("replica healthy", async () => ((await adminGet<LbState>(lb, "/admin/state")).replicas[0]?.healthy ? true : undefined));
  const send = (key: string, text: string) => post(`${lb.url}/v1/chat/completions`, chatBody(text), { authorization: `Bearer ${key}` });

  const inFlight = send(REVOKED, "dispatched before the revocation");
  const running = await waitFor("at the replica", () => engine.held[0]);
  const heldLength = async (length: number) => ((await adminGet<LbState>(lb, "/admin/state")).queue.length === length ? true : undefined);
  const held = send(REVOKED, "held when the key is revoked");
  await waitFor("held first", () => heldLength(1));
  const heldKept = send(KEPT, "held, its key stays");
  await waitFor("held second", () => heldLength(2));

  await adminPutConfig(lb, { ...config, version: 2, clientAuth: { required: true, keys: [entry("ba9876543210", KEPT, "stayer")] } });
  const fresh = await send(REVOKED, "sent after the revocation");
  assert.equal(fresh.status, 401);
  // A slot frees: the request in flight finishes, and the next held one goes to the replica. The
  // revoked key's was held first; it must not be the one.
  running.res.writeHead(200, { "content-type": "application/json" }).end(completionJson("done"));
  assert.equal((await inFlight).status, 200);
  const next = await waitFor("the next held request at the replica", () => engine.held[1]);
  assert.doesNotMatch(next.body, /held when the key is revoked/, "the revoked key's held request was dispatched after the revocation");
  assert.match(next.body, /held, its key stays/);
  next.res.writeHead(200, { "content-type": "application/json" }).end(completionJson("kept"));
  assert.equal((await heldKept).status, 200);
  const refused = await held;
  assert.equal(refused.status, 401, refused.text);
  assert.deepEqual(JSON.parse(refused.text), JSON.parse(fresh.text), "the same refusal as a new request with the key");
  assert.equal(refused.headers["www-authenticate"], fresh.headers["www-authenticate"]);
  assert.equal(engine.held.length, 2);
});

test("where keys are not required, a dropped key's held request goes on, no longer keyed", async () => {
  const engine = await startHoldingEngine("us-x", "us-ashburn");
  cleanups.push(() => engine.close());
  const config: LbConfigInput = lbConfig("lb-us", "us-ashburn", [], {
    replicas: [{ id: "us-x", url: engine.url, region: "us-ashburn", model: MODEL, engine: "sglang", maxConcurrency: 1 }],
    clientAuth: { required: false, keys: [entry("0123456789ab", REVOKED, "leaver")] },
  });
  const lb = await startLb(config);
  cleanups.push(() => lb.close());
  await waitFor("replica healthy", async () => ((await adminGet<LbState>(lb, "/admin/state")).replicas[0]?.healthy ? true : undefined));
  const send = (text: string) => post(`${lb.url}/v1/chat/completions`, chatBody(text), { authorization: `Bearer ${REVOKED}` });
  const first = send("first");
  const running = await waitFor("at the replica", () => engine.held[0]);
  const held = send("held");
  await waitFor("one held", async () => ((await adminGet<LbState>(lb, "/admin/state")).queue.length === 1 ? true : undefined));
  await adminPutConfig(lb, { ...config, version: 2, clientAuth: { required: false, keys: [] } });
  const ticket = lb.balancer.core.queue.peek();
  assert.equal(ticket?.clientKeyed, false, "a key-requiring peer would have taken it as keyed");
  running.res.writeHead(200, { "content-type": "application/json" }).end(completionJson("done"));
  const next = await waitFor("the held request at the replica", () => engine.held[1]);
  next.res.writeHead(200, { "content-type": "application/json" }).end(completionJson("served"));
  assert.equal((await first).status, 200);
  assert.equal((await held).status, 200);
});

test("a push that makes keys required refuses the held anonymous requests with the 401 a new one gets", async () => {
  const engine = await startHoldingEngine("us-x", "us-ashburn");
  cleanups.push(() => engine.close());
  const config: LbConfigInput = lbConfig("lb-us", "us-ashburn", [], {
    replicas: [{ id: "us-x", url: engine.url, region: "us-ashburn", model: MODEL, engine: "sglang", maxConcurrency: 1 }],
    clientAuth: { required: false, keys: [entry("ba9876543210", KEPT, "stayer")] },
  });
  const lb = await startLb(config);
  cleanups.push(() => lb.close());
  await waitFor("replica healthy", async () => ((await adminGet<LbState>(lb, "/admin/state")).replicas[0]?.healthy ? true : undefined));
  const first = post(`${lb.url}/v1/chat/completions`, chatBody("first, anonymous"));
  const running = await waitFor("at the replica", () => engine.held[0]);
  const held = post(`${lb.url}/v1/chat/completions`, chatBody("held, anonymous"));
  await waitFor("one held", async () => ((await adminGet<LbState>(lb, "/admin/state")).queue.length === 1 ? true : undefined));

  await adminPutConfig(lb, { ...config, version: 2, clientAuth: { ...config.clientAuth!, required: true } });
  const fresh = await post(`${lb.url}/v1/chat/completions`, chatBody("new, anonymous"));
  assert.equal(fresh.status, 401);
  const refused = await held;
  assert.equal(refused.status, 401, "the held one is refused as the new one is");
  assert.equal(refused.text, fresh.text);
  running.res.writeHead(200, { "content-type": "application/json" }).end(completionJson("done"));
  assert.equal((await first).status, 200, "the request in flight finishes");
  assert.equal(engine.held.length, 1, "nothing else reached the replica");
});

test("a request of a revoked key that a retry puts back in the hold queue gets its 401, not a second replica", async () => {
  const a = await startHoldingEngine("us-a", "us-ashburn");
  const b = await startHoldingEngine("us-b", "us-ashburn");
  cleanups.push(
    () => a.close(),
    () => b.close(),
  );
  const replica = (engine: typeof a) => ({ id: engine.id, url: engine.url, region: "us-ashburn", model: MODEL, engine: "sglang" as const, maxConcurrency: 1 });
  const config: LbConfigInput = lbConfig("lb-us", "us-ashburn", [], {
    replicas: [replica(a), replica(b)],
    clientAuth: { required: true, keys: [entry("0123456789ab", REVOKED, "leaver"), entry("ba9876543210", KEPT, "stayer")] },
  });
  const lb = await startLb(config);
  cleanups.push(() => lb.close());
  await waitFor("replicas healthy", async () => ((await adminGet<LbState>(lb, "/admin/state")).replicas.every((r) => r.healthy) ? true : undefined));
  const send = (key: string, text: string) => post(`${lb.url}/v1/chat/completions`, chatBody(text), { authorization: `Bearer ${key}` });

  const kept = send(KEPT, "fills one replica");
  const keptAt = await waitFor("the kept key's request at a replica", () => (a.held.length === 1 ? a : b.held.length === 1 ? b : undefined));
  const other = keptAt === a ? b : a;
  let revokedAnswer: Awaited<ReturnType<typeof send>> | null = null;
  const revoked = send(REVOKED, "in flight when the key is revoked").then((result) => (revokedAnswer = result));
  const running = await waitFor("the revoked key's request at the other replica", () => other.held[0]);

  await adminPutConfig(lb, { ...config, version: 2, clientAuth: { required: true, keys: [entry("ba9876543210", KEPT, "stayer")] } });
  const fresh = await send(REVOKED, "sent after the revocation");
  assert.equal(fresh.status, 401);
  // An overloaded engine: the request moves on, and with the other replica full it is held again.
  running.res.writeHead(503, { "content-type": "application/json" }).end('{"error":{"message":"overloaded"}}');
  const queued = async () => ((await adminGet<LbState>(lb, "/admin/state")).queue.length === 1 ? true : undefined);
  await waitFor("the revoked key's request answered, or held again", async () => revokedAnswer !== null || queued());
  // A slot frees: a held request would be placed there now.
  keptAt.held[0]?.res.writeHead(200, { "content-type": "application/json" }).end(completionJson("done"));
  assert.equal((await kept).status, 200);
  await waitFor("the revoked key's request answered, or dispatched again", () => revokedAnswer !== null || keptAt.held.length > 1);
  assert.equal(keptAt.held.length, 1, "the revoked key's request reached a second replica after the revocation");
  const refused = await revoked;
  assert.equal(refused.status, 401, refused.text);
  assert.deepEqual(JSON.parse(refused.text), JSON.parse(fresh.text), "the same refusal as a new request with the key");
});
