// The context window (max_model_len, /v1/models) holds the prompt and the reply together, as vLLM
// enforces it: prompt + max_tokens beyond it is a 400, and without max_tokens the reply stops where
// the context ends. The engine never holds more than its KV (usage above 100 % in /metrics).
import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { DEMO_ENGINE_PARAMS } from "../engine";
import { startEngineServer, type EngineServer } from "./index";

const CONTEXT = 1000;

let server: EngineServer;
before(async () => {
  server = await startEngineServer({ id: "e1", region: "local", params: { ...DEMO_ENGINE_PARAMS, kvCapacityTokens: CONTEXT, itlBaseMs: 1 } });
});
after(() => server.close());

function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

interface ErrorBody {
  error: { message: string; param: string | null; code: string | null };
}

// `user ␟ content ␞`: 3,950 characters of content make 3,956 characters, 989 prompt tokens.
const nearlyFull = [{ role: "user", content: "x".repeat(3950) }];
const PROMPT_TOKENS = 989;

it("refuses a prompt + max_tokens beyond the context with vLLM's 400, naming where the prompt was", async () => {
  const chat = await post("/v1/chat/completions", { messages: nearlyFull, max_tokens: 100, stream: true });
  assert.equal(chat.status, 400);
  const chatError = ((await chat.json()) as ErrorBody).error;
  assert.equal(chatError.code, "context_length_exceeded");
  assert.equal(chatError.param, "messages");
  assert.match(
    chatError.message,
    new RegExp(
      `maximum context length is ${CONTEXT} tokens\\. However, you requested ${PROMPT_TOKENS + 100} tokens \\(${PROMPT_TOKENS} in the messages, 100 in the completion\\)`,
    ),
  );

  // /v1/completions defaults max_tokens to 16: 990 prompt tokens + 16 do not fit either.
  const text = await post("/v1/completions", { prompt: "x".repeat(3960) });
  assert.equal(text.status, 400);
  const textError = ((await text.json()) as ErrorBody).error;
  assert.equal(textError.code, "context_length_exceeded");
  assert.equal(textError.param, "prompt");

  // What fits exactly is served.
  const fits = await post("/v1/chat/completions", { messages: nearlyFull, max_tokens: CONTEXT - PROMPT_TOKENS });
  assert.equal(fits.status, 200);
  const usage = ((await fits.json()) as { usage: { prompt_tokens: number; total_tokens: number } }).usage;
  assert.equal(usage.prompt_tokens, PROMPT_TOKENS);
  assert.equal(usage.total_tokens, CONTEXT);
});

it("without max_tokens, stops the reply where the context ends, for its length", async () => {
  const res = await post("/v1/chat/completions", { messages: nearlyFull });
  assert.equal(res.status, 200);
  const body = (await res.json()) as { choices: { finish_reason: string }[]; usage: { prompt_tokens: number; completion_tokens: number } };
  assert.equal(body.usage.prompt_tokens, PROMPT_TOKENS);
  assert.equal(body.usage.completion_tokens, CONTEXT - PROMPT_TOKENS);
  assert.equal(body.choices[0]!.finish_reason, "length");
});

it("refuses a completion whose prompt fills the whole context (nothing left to generate), but embeds such an input", async () => {
  // 3,994 characters of content: exactly 1,000 prompt tokens.
  const full = await post("/v1/chat/completions", { messages: [{ role: "user", content: "x".repeat(3994) }] });
  assert.equal(full.status, 400);
  assert.equal(((await full.json()) as ErrorBody).error.code, "context_length_exceeded");

  const embedding = await post("/v1/embeddings", { input: "x".repeat(4 * CONTEXT) });
  assert.equal(embedding.status, 200);
  assert.equal(((await embedding.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens, CONTEXT);
  const tooLong = await post("/v1/embeddings", { input: "x".repeat(4 * CONTEXT + 1) });
  assert.equal(tooLong.status, 400);
  const error = ((await tooLong.json()) as ErrorBody).error;
  assert.equal(error.code, "context_length_exceeded");
  assert.equal(error.param, "input");
});
