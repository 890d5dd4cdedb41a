// SkyLB selective pushing at the LB: when every replica reports waiting requests the LB holds new
// requests in its own FIFO queue, and drains it as replicas free up; past the queue bound, 503.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import type { LbState } from "@meridian/protocol";
import type { RunningProxy } from "../src/index";
import { adminGet, chatBody, DEMO_ENGINE_PARAMS, lbConfig, post, startEngine, startLb, waitFor, type Engine } from "./helpers";

// One request at a time, 80 tokens at 20 ms each: each request holds its replica for ~1.6 s, long
// enough to observe on a loaded machine.
const SLOW = { ...DEMO_ENGINE_PARAMS, maxRunning: 1, itlBaseMs: 20, maxOutputTokens: 80 };
const slowChat = (text: string) => chatBody(text, { max_tokens: 80 });

let engines: Engine[];
let lb: RunningProxy;

before(async () => {
  engines = [await startEngine("us-a", "us-ashburn", { params: SLOW }), await startEngine("us-b", "us-ashburn", { params: SLOW })];
  lb = await startLb(lbConfig("lb-us", "us-ashburn", engines, { policy: "least-request", limits: { queueMaxLength: 2, queueMaxWaitMs: 20_000 } }));
});
after(async () => {
  await lb?.close();
  for (const engine of engines ?? []) await engine.close();
});

test("queues when every replica reports waiting requests and drains when they free up", async () => {
  // Two requests per replica: one running, one waiting in the engine.
  const first = Array.from({ length: 4 }, (_, i) => post(`${lb.url}/v1/chat/completions`, slowChat(`fill ${i}`)));
  await waitFor("both replicas full", async () => {
    const state = await adminGet<LbState>(lb, "/admin/state");
    return state.replicas.every((r) => r.full && r.scrape.waiting > 0) ? state : undefined;
  });
  const held = [post(`${lb.url}/v1/chat/completions`, slowChat("held 1")), post(`${lb.url}/v1/chat/completions`, slowChat("held 2"))];
  const queued = await waitFor("requests held in the LB queue", async () => {
    const state = await adminGet<LbState>(lb, "/admin/state");
    return state.queue.length === 2 ? state : undefined;
  });
  assert.ok(queued.totals.queued >= 2);
  // The queue is bounded: a third waiting request is refused at once with Retry-After.
  const refused = await post(`${lb.url}/v1/chat/completions`, slowChat("one too many"));
  assert.equal(refused.status, 503);
  assert.ok(Number(refused.headers["retry-after"]) >= 1);
  assert.equal(JSON.parse(refused.text).error.code, "queue_full");
  for (const result of await Promise.all([...first, ...held])) assert.equal(result.status, 200, result.text);
  const drained = await adminGet<LbState>(lb, "/admin/state");
  assert.equal(drained.queue.length, 0);
  assert.ok(drained.replicas.every((r) => r.inFlight === 0 && r.queuedTokens === 0));
});
