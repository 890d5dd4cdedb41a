// Prompts real OpenAI clients send, through the LB to an engine that counts prompt tokens as vLLM
// does: tool definitions (rendered by the chat template), token-id prompts (lm-evaluation-harness),
// and echo with max_tokens 0 (prompt scoring). Each must reach the engine, and none may skew what the
// LB admits afterwards. A recording fake engine and the LB on loopback, port 0; closed after.
import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { lbConfig, MODEL, post, startLb } from "../test/helpers";
import type { RunningProxy } from "./index";

const seen: Record<string, unknown>[] = [];
let engine: ReturnType<typeof createServer>;
let lb: RunningProxy;

/** Prompt tokens as the engine counts them: 4 characters a token of everything its template renders
 * (messages and tool definitions), or the ids themselves. */
function promptTokens(body: Record<string, unknown>): number {
  const prompt = body["prompt"];
  if (Array.isArray(prompt)) return prompt.flat().length;
  if (typeof prompt === "string") return Math.ceil(prompt.length / 4);
  const messages = body["messages"] as { content: string }[];
  const chars = messages.reduce((n, m) => n + m.content.length, 0) + (body["tools"] ? JSON.stringify(body["tools"]).length : 0);
  return Math.ceil(chars / 4);
}

before(async () => {
  engine = createServer((req, res) => {
    if (req.url === "/health") return void res.end("{}");
    if (req.url === "/metrics") return void res.end("sglang:num_running_reqs 0\nsglang:num_queue_reqs 0\n");
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
      seen.push(body);
      const tokens = promptTokens(body);
      const usage = { prompt_tokens: tokens, completion_tokens: 1, total_tokens: tokens + 1 };
      res.setHeader("content-type", "application/json");
      const choice = body["messages"]
        ? { index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }
        : { index: 0, text: "ok", finish_reason: "length", logprobs: null };
      res.end(JSON.stringify({ id: "x", object: "completion", choices: [choice], usage }));
    });
  });
  await new Promise<void>((resolve) => engine.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(engine.address() as AddressInfo).port}`;
  lb = await startLb(lbConfig("lb-us", "us-ashburn", [{ id: "e1", region: "us-ashburn", url }]));
});

after(async () => {
  await lb?.close();
  engine?.closeAllConnections();
  await new Promise((resolve) => engine?.close(resolve));
});

const tools = Array.from({ length: 12 }, (_, i) => ({
  type: "function",
  function: {
    name: `tool_${i}`,
    description: "Reads a file of the workspace and returns its content with line numbers. ".repeat(4),
    parameters: { type: "object", properties: { path: { type: "string", description: "workspace-relative path" } }, required: ["path"] },
  },
}));

test("an agent's request with tools does not make the LB refuse a 40k-token prompt as too long", async () => {
  const agent = await post(`${lb.url}/v1/chat/completions`, {
    model: MODEL,
    messages: [
      { role: "system", content: "You are a coding agent. Use the tools. ".repeat(50) },
      { role: "user", content: "Open README.md" },
    ],
    tools,
  });
  assert.equal(agent.status, 200, agent.text);
  assert.deepEqual(seen.at(-1)?.["tools"], tools, "the tools reach the engine as sent");
  // 162k characters at the engine's 4 chars/token: 40.5k tokens, well under maxPromptTokens (131,072).
  const long = await post(`${lb.url}/v1/chat/completions`, { model: MODEL, messages: [{ role: "user", content: "lorem ipsum dolor sit amet ".repeat(6000) }] });
  assert.equal(long.status, 200, long.text);
});

test("completions: echo with max_tokens 0 (prompt scoring) reaches the engine; -1 is refused in OpenAI's words", async () => {
  const before = seen.length;
  const scored = await post(`${lb.url}/v1/completions`, { model: MODEL, prompt: "Hello world", max_tokens: 0, echo: true, logprobs: 1 });
  assert.equal(scored.status, 200, scored.text);
  assert.equal(seen.length, before + 1);
  assert.equal(seen.at(-1)?.["max_tokens"], 0);
  const refused = await post(`${lb.url}/v1/completions`, { model: MODEL, prompt: "Hello world", max_tokens: -1 });
  const openai = JSON.parse(readFileSync(new URL("../../protocol/test/fixtures/error-openai-integer-below-min.json", import.meta.url), "utf8"));
  assert.equal(refused.status, 400);
  assert.deepEqual(JSON.parse(refused.text).error, openai.error);
  assert.equal(seen.length, before + 1, "the refused request never reached the engine");
});

test("completions: token-id prompts, one or a batch, reach the engine unchanged", async () => {
  const ids = [15496, 995, 11, 340];
  const one = await post(`${lb.url}/v1/completions`, { model: MODEL, prompt: ids, max_tokens: 4 });
  assert.equal(one.status, 200, one.text);
  assert.deepEqual(seen.at(-1)?.["prompt"], ids);
  const batch = [
    [15496, 995],
    [15496, 11],
  ];
  const many = await post(`${lb.url}/v1/completions`, { model: MODEL, prompt: batch, max_tokens: 4 });
  assert.equal(many.status, 200, many.text);
  assert.deepEqual(seen.at(-1)?.["prompt"], batch);
  const mixed = await post(`${lb.url}/v1/completions`, { model: MODEL, prompt: [[1, 2], "text"], max_tokens: 4 });
  assert.equal(mixed.status, 400);
  assert.equal(JSON.parse(mixed.text).error.param, "prompt");
});
