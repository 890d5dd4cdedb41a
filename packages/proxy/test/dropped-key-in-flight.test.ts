// A config push that drops a client key where keys are not required: a request of that key already
// in flight counts as anonymous for where it may still move (a peer that requires keys takes it no
// more: stalled-forward.test.ts), but the push does not turn its 200 and its tokens into anonymous
// traffic, nor does a retry after it. (Pushed through the admin API, the push also drops the key's
// series: client-metrics.ts counts a key only while the config has it.)
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { type LbConfigInput, parseLbConfig } from "@meridian/protocol";
import { parsePrometheusText } from "../src/index";
import { chatBody, lbConfig, post, startHoldingEngine, waitFor } from "./helpers";
import { scrapeWithClientSeries } from "./client-series";
import { startScriptedEngine } from "./scripted-engine";
import { clientKeysLosingOne, closedAfterTests, LIMITS, observedLb, region } from "./stalled-harness";

const open = closedAfterTests();

/** The client series counted under no key. */
async function anonymousSeries(lb: { url: string }): Promise<string[]> {
  const samples = parsePrometheusText(await scrapeWithClientSeries(lb)).samples;
  return samples
    .filter((s) => s.name.startsWith("meridian_lb_client_") && s.labels.key_id === "anonymous")
    .map((s) => `${s.name}{${s.labels.status ?? s.labels.kind}} ${s.value}`);
}

test("a request in flight when its key is dropped is not counted as anonymous", async () => {
  const engine = await startScriptedEngine("e1", 1);
  open.push(engine);
  const keys = clientKeysLosingOne(false);
  const config = (version: number): LbConfigInput => ({
    ...lbConfig("lb-id", region, [{ id: engine.id, url: engine.url, region }], { ...LIMITS, version }),
    clientAuth: keys.clientAuth(version > 1),
  });
  const { lb } = await observedLb(config(1), open);
  const reply = post(`${lb.url}/v1/chat/completions`, chatBody("k"), { "x-session-id": "k", authorization: `Bearer ${keys.leaving}` });
  await waitFor("on the engine", () => engine.holds("k"));
  // An unrelated push that drops the key (keys are not required): the request runs on where it is.
  await lb.balancer.applyConfig(parseLbConfig(config(2)));
  engine.finish("k");
  assert.equal((await reply).status, 200);
  assert.deepEqual(await anonymousSeries(lb), [], "the key's request (and tokens) were counted as anonymous");
});

test("a request in flight when its key is dropped, retried after a 503, is not counted as anonymous", async () => {
  const e1 = await startHoldingEngine("e1", region);
  const e2 = await startHoldingEngine("e2", region);
  open.push(e1, e2);
  const keys = clientKeysLosingOne(false);
  const config = (version: number): LbConfigInput => ({
    ...lbConfig(
      "lb-id",
      region,
      [e1, e2].map((e) => ({ id: e.id, url: e.url, region })),
      { ...LIMITS, version },
    ),
    clientAuth: keys.clientAuth(version > 1),
  });
  const { lb } = await observedLb(config(1), open);
  const reply = post(`${lb.url}/v1/chat/completions`, chatBody("k"), { "x-session-id": "k", authorization: `Bearer ${keys.leaving}` });
  const first = await waitFor("on an engine", () => (e1.held[0] ? e1 : e2.held[0] ? e2 : undefined));
  await lb.balancer.applyConfig(parseLbConfig(config(2)));
  first.held[0]?.res.writeHead(503).end("busy");
  const other = first === e1 ? e2 : e1;
  const retried = await waitFor("retried on the other engine", () => other.held[0]);
  const usage = { prompt_tokens: 50, completion_tokens: 2, total_tokens: 52 };
  const choices = [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }];
  retried.res
    .writeHead(200, { "content-type": "application/json" })
    .end(JSON.stringify({ id: "x", object: "chat.completion", created: 0, model: "m", choices, usage }));
  assert.equal((await reply).status, 200);
  assert.deepEqual(await anonymousSeries(lb), [], "the retried request (and its tokens) were counted as anonymous");
});
