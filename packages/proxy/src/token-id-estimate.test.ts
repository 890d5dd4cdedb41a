// Token-id prompts (d3a74d0): an id IS one token of the engine's, but the LB counts each id as 4
// characters and turns them into tokens through the calibrated chars/token ratio. A fleet whose
// text calibrated the ratio away from 4 (CJK ~1.1, code/digits ~2) then (a) refuses token-id prompts
// far below maxPromptTokens, and (b) token-id traffic (eval harnesses) drags the text ratio to 4.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import type { RunningProxy } from "./index";
import { lbConfig, MODEL, post, startLb } from "../test/helpers";
import { startRecordingEngine } from "../test/recording-engine";

let engine: Awaited<ReturnType<typeof startRecordingEngine>>;
let lb: RunningProxy;

before(async () => {
  engine = await startRecordingEngine((seen, res) => {
    const body = JSON.parse(seen.body) as { prompt: unknown };
    const promptTokens = Array.isArray(body.prompt) ? body.prompt.length : 10;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        choices: [{ index: 0, text: "ok", finish_reason: "stop" }],
        usage: { prompt_tokens: promptTokens, completion_tokens: 1, total_tokens: promptTokens + 1 },
      }),
    );
  });
  lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine], { limits: { maxPromptTokens: 4000 } } as never));
});
after(async () => {
  await lb?.close();
  await engine?.close();
});

const ids = (n: number) => Array.from({ length: n }, (_, i) => 1000 + (i % 5000));

test("a token-id prompt under maxPromptTokens is admitted whatever the text calibration", async () => {
  const estimator = lb.balancer.core.estimator;
  // A CJK fleet: many long prompts at ~1.2 characters a token.
  for (let i = 0; i < 200; i++) estimator.observe(12_000, 10_000);
  assert.ok(estimator.charsPerToken < 1.3, String(estimator.charsPerToken));
  // 3000 token ids: 3000 tokens, under the 4000 limit.
  const result = await post(`${lb.url}/v1/completions`, { model: MODEL, prompt: ids(3000), max_tokens: 1 });
  assert.equal(result.status, 200, result.text.slice(0, 300));
});

test("token-id traffic does not drag the text calibration to 4 characters a token", async () => {
  const estimator = lb.balancer.core.estimator;
  for (let i = 0; i < 200; i++) estimator.observe(12_000, 10_000);
  const before = estimator.charsPerToken;
  for (let i = 0; i < 20; i++) {
    // 900 ids: admitted even at 1.2 chars/token (3600 chars -> 3000 "tokens").
    const result = await post(`${lb.url}/v1/completions`, { model: MODEL, prompt: ids(900), max_tokens: 1 });
    assert.equal(result.status, 200, result.text.slice(0, 300));
  }
  assert.ok(Math.abs(estimator.charsPerToken - before) < 0.05, `ratio moved ${before.toFixed(2)} -> ${estimator.charsPerToken.toFixed(2)}`);
});
