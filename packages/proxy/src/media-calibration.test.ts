// b0bfbd8 counts an image part as 4096 characters (~1k tokens at 4 chars/token), and d3a74d0 calibrates
// the one chars/token ratio from every answer. A vision engine spends its own number of tokens on an
// image (Qwen2-VL: ~2k for 1280x1280), so image requests teach the ratio "4496 chars = 2600 tokens"
// (1.73), and the LB then over-counts every TEXT prompt 2.3x: a 20k-token document is refused as
// context_length_exceeded by an LB whose limit is 32k.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import type { RunningProxy } from "./index";
import { lbConfig, MODEL, post, startLb } from "../test/helpers";
import { startRecordingEngine } from "../test/recording-engine";

const IMAGE_TOKENS = 2500;
let engine: Awaited<ReturnType<typeof startRecordingEngine>>;
let lb: RunningProxy;

before(async () => {
  engine = await startRecordingEngine((seen, res) => {
    const body = JSON.parse(seen.body) as { messages: { content: unknown }[] };
    let tokens = 0;
    for (const m of body.messages) {
      if (typeof m.content === "string") tokens += Math.ceil(m.content.length / 4);
      else
        for (const part of m.content as { type: string; text?: string }[])
          tokens += part.type === "text" ? Math.ceil((part.text ?? "").length / 4) : IMAGE_TOKENS;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
        usage: { prompt_tokens: tokens, completion_tokens: 1, total_tokens: tokens + 1 },
      }),
    );
  });
  lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine], { limits: { maxPromptTokens: 32_768 } } as never));
});
after(async () => {
  await lb?.close();
  await engine?.close();
});

test("vision traffic does not make the LB refuse a text prompt well under its limit", async () => {
  const image = { type: "image_url", image_url: { url: `data:image/png;base64,${"iVBORw0KGgo".repeat(200)}` } };
  for (let i = 0; i < 60; i++) {
    const question = { type: "text", text: `Describe picture ${i}: what is in it, and what colours dominate? `.repeat(6) };
    const r = await post(`${lb.url}/v1/chat/completions`, {
      model: MODEL,
      messages: [{ role: "user", content: [question, { ...image, image_url: { url: `${image.image_url.url}${i}` } }] }],
      max_tokens: 1,
    });
    assert.equal(r.status, 200, r.text);
  }
  const ratio = lb.balancer.core.estimator.charsPerToken;
  // A 20k-token document (80k characters of English): the engine's 32k context holds it.
  const document = "The quick brown fox jumps over the lazy dog, again and again. ".repeat(1300).slice(0, 80_000);
  const r = await post(`${lb.url}/v1/chat/completions`, { model: MODEL, messages: [{ role: "user", content: document }], max_tokens: 1 });
  assert.equal(r.status, 200, `ratio ${ratio.toFixed(2)}: ${r.text.slice(0, 200)}`);
});
