// What the LB's /metrics means to an operator reading it through increase() and rate(): event
// counters exist at 0 before their first event (a series born at 1 has no increase), the LB-wide
// prediction accuracy is absent until a prediction was checked (it read 1, "exact", for engines that
// report no cached tokens), a request a replica received and failed is an upstream failure, not
// a refusal "before reaching a replica", and a refusal is counted under its own reason. Engines and LBs on 127.0.0.1, port 0, closed after each test.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { request } from "undici";
import { chatBody, lbConfig, post, startEngine, startLb, waitFor } from "../test/helpers";
import { startRecordingEngine } from "../test/recording-engine";
import { parsePrometheusText } from "./prometheus-text";

async function samples(url: string) {
  return parsePrometheusText(await (await request(`${url}/metrics`)).body.text()).samples;
}

const sampleValue = (all: Awaited<ReturnType<typeof samples>>, name: string, labels: Record<string, string> = {}) =>
  all.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

test("event counters read 0 before their first event; accuracy is absent until a prediction was checked", async (t) => {
  // An engine without cached-token reports (vLLM without --enable-prompt-tokens-details).
  const engine = await startEngine("us-1", "us-ashburn", { cacheReport: false });
  t.after(() => engine.close());
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]));
  t.after(() => lb.close());
  for (let i = 0; i < 3; i++) assert.equal((await post(`${lb.url}/v1/chat/completions`, chatBody(`hello ${i}`))).status, 200);
  const all = await samples(lb.url);
  assert.equal(sampleValue(all, "meridian_lb_prediction_samples_total"), 0, "no request could be checked");
  assert.equal(sampleValue(all, "meridian_lb_prediction_accuracy_ratio"), undefined, "LB-wide accuracy with 0 checked requests");
  for (const reason of ["no_replica", "queue_full", "queue_timeout", "invalid_api_key", "bad_request"]) {
    assert.equal(sampleValue(all, "meridian_lb_rejected_requests_total", { reason }), 0, `rejected ${reason}`);
  }
  for (const reason of ["upstream_failed", "shutting_down"]) assert.equal(sampleValue(all, "meridian_lb_cut_streams_total", { reason }), 0, `cut ${reason}`);
  for (const reason of ["first_byte_deadline", "headers_timeout", "replica_unhealthy"]) {
    assert.equal(sampleValue(all, "meridian_lb_redispatched_requests_total", { replica: "us-1", reason }), 0, `redispatched ${reason}`);
  }
  for (const reason of ["engine-restart", "cache-lost", "operator"]) {
    assert.equal(sampleValue(all, "meridian_lb_replica_index_clears_total", { replica: "us-1", reason }), 0, `clears ${reason}`);
  }
});

test("a request the replica received and failed is an upstream failure, not a refusal before a replica", async (t) => {
  // The replica reads each request, then drops the connection without answering.
  const engine = await startRecordingEngine((_seen, res) => res.socket?.destroy());
  t.after(() => engine.close());
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]));
  t.after(() => lb.close());
  await waitFor("replica healthy", async () => sampleValue(await samples(lb.url), "meridian_lb_replica_healthy") === 1);
  const r = await post(`${lb.url}/v1/chat/completions`, chatBody("hello"));
  assert.equal(r.status, 502);
  assert.ok(engine.seen.length >= 1, "the replica received the request");
  const all = await samples(lb.url);
  const refused = all.filter((s) => s.name === "meridian_lb_rejected_requests_total" && s.value > 0);
  assert.deepEqual(
    refused.map((s) => `${s.labels.reason}=${s.value}`),
    [],
  );
  const failed = all.filter((s) => s.name === "meridian_lb_upstream_failures_total");
  assert.deepEqual(
    failed.map((s) => `${s.labels.replica} ${s.labels.reason}=${s.value}`),
    [`${engine.id} upstream_error=1`],
  );
});

test("a prompt over limits.maxPromptTokens is counted as prompt_too_long, not as a bad request", async (t) => {
  const engine = await startEngine("us-1", "us-ashburn");
  t.after(() => engine.close());
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine], { limits: { maxPromptTokens: 1_000 } } as never));
  t.after(() => lb.close());
  const refused = await post(`${lb.url}/v1/chat/completions`, chatBody("x".repeat(20_000)));
  assert.equal(refused.status, 400);
  assert.equal(JSON.parse(refused.text).error.code, "context_length_exceeded");
  const all = await samples(lb.url);
  assert.deepEqual(
    ["prompt_too_long", "bad_request"].map((reason) => sampleValue(all, "meridian_lb_rejected_requests_total", { reason })),
    [1, 0],
  );
});
