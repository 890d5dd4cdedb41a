// A config push that drops a client key where keys are not required: a request of that key already
// in flight counts as anonymous for where it may still move (a peer that requires keys takes it no
// more: stalled-forward.test.ts), but it stays counted, in the client metrics, under the key it was
// admitted and served with: the push does not turn its 200 and its tokens into anonymous traffic.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { type LbConfigInput, parseLbConfig } from "@meridian/protocol";
import { parsePrometheusText } from "../src/index";
import { chatBody, lbConfig, post, waitFor } from "./helpers";
import { scrapeWithClientSeries } from "./client-series";
import { startScriptedEngine } from "./scripted-engine";
import { clientKeysLosingOne, closedAfterTests, LIMITS, observedLb, region } from "./stalled-harness";

const open = closedAfterTests();

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
  const samples = parsePrometheusText(await scrapeWithClientSeries(lb)).samples.filter((s) => s.name.startsWith("meridian_lb_client_"));
  const anonymous = samples.filter((s) => s.labels.key_id === "anonymous").map((s) => `${s.name}{${s.labels.status ?? s.labels.kind}} ${s.value}`);
  assert.deepEqual(anonymous, [], "the key's request (and tokens) were counted as anonymous");
});
