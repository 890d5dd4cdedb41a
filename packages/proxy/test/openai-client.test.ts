// The official openai client, streaming and not, gets through the LB what it gets from the replica.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import type { RunningProxy } from "../src/index";
import type { LbState } from "@meridian/protocol";
import { adminGet, chatBody, lbConfig, MODEL, startEngine, startLb, waitFor, type Engine } from "./helpers";

let engine: Engine;
let lb: RunningProxy;

before(async () => {
  engine = await startEngine("us-1", "us-ashburn");
  lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]));
});
after(async () => {
  await lb?.close();
  await engine?.close();
});

async function streamChat(baseURL: string, includeUsage: boolean, userText: string) {
  const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: "unused", maxRetries: 0 });
  const body = chatBody(userText) as unknown as OpenAI.Chat.ChatCompletionCreateParamsStreaming;
  const stream = await client.chat.completions.create({
    ...body,
    stream: true,
    ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
  });
  let content = "";
  let usageChunks = 0;
  let finish: string | null = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usageChunks++;
    const choice = chunk.choices[0];
    if (choice?.delta?.content) content += choice.delta.content;
    if (choice?.finish_reason) finish = choice.finish_reason;
  }
  return { content, usageChunks, finish, chunks };
}

test("streamed chat through the LB matches the replica called directly", async () => {
  const direct = await streamChat(engine.url, false, "Tell me about the sea.");
  const viaLb = await streamChat(lb.url, false, "Tell me about the sea.");
  assert.ok(direct.content.length > 0);
  assert.deepEqual(viaLb, direct);
  // The LB asked for usage upstream on the client's behalf and stripped it: the client saw none.
  assert.equal(viaLb.usageChunks, 0);
});

test("a client that asks for usage gets it, with cached tokens", async () => {
  const direct = await streamChat(engine.url, true, "Tell me about rivers.");
  const viaLb = await streamChat(lb.url, true, "Tell me about rivers.");
  assert.equal(viaLb.content, direct.content);
  assert.equal(viaLb.usageChunks, 1);
});

test("non-streaming chat and text completions through the LB", async () => {
  const client = new OpenAI({ baseURL: `${lb.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const directClient = new OpenAI({ baseURL: `${engine.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const body = chatBody("Tell me about lakes.") as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
  const viaLb = await client.chat.completions.create(body);
  const direct = await directClient.chat.completions.create(body);
  assert.equal(viaLb.choices[0]?.message.content, direct.choices[0]?.message.content);
  assert.ok((viaLb.usage?.prompt_tokens ?? 0) > 0);
  const text = await client.completions.create({ model: MODEL, prompt: "Once upon a time ".repeat(10), max_tokens: 5 });
  assert.ok((text.choices[0]?.text ?? "").length > 0);
  const models = await client.models.list();
  assert.deepEqual(
    models.data.map((m) => m.id),
    [MODEL],
  );
});

test("a vLLM-dialect replica is scraped and served like an SGLang one", async () => {
  const vllm = await startEngine("us-vllm", "us-ashburn", { dialect: "vllm" });
  const config = lbConfig("lb-vllm", "us-ashburn", [vllm]);
  config.replicas = (config.replicas ?? []).map((r) => ({ ...r, engine: "vllm" as const }));
  const balancer = await startLb(config);
  try {
    const state = await waitFor("vllm scraped", async () => {
      const s = await adminGet<LbState>(balancer, "/admin/state");
      return s.replicas[0]?.scrape.ok ? s : undefined;
    });
    assert.equal(state.replicas[0]?.scrape.error, null);
    const client = new OpenAI({ baseURL: `${balancer.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const reply = await client.chat.completions.create(chatBody("hello vllm") as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);
    assert.ok((reply.choices[0]?.message.content ?? "").length > 0);
  } finally {
    await balancer.close();
    await vllm.close();
  }
});

test("a request naming a model goes only to replicas serving it; /v1/models lists every model", async () => {
  const other = await startEngine("us-other", "us-ashburn", { model: "other-model" });
  const config = lbConfig("lb-models", "us-ashburn", [engine, other], { policy: "round-robin" });
  config.replicas = (config.replicas ?? []).map((r) => (r.id === "us-other" ? { ...r, model: "other-model" } : r));
  const balancer = await startLb(config);
  try {
    const client = new OpenAI({ baseURL: `${balancer.url}/v1`, apiKey: "unused", maxRetries: 0 });
    for (let i = 0; i < 4; i++) {
      const { data, response } = await client.chat.completions
        .create({ ...(chatBody(`which model ${i}`) as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming), model: "other-model" })
        .withResponse();
      assert.equal(response.headers.get("x-meridian-replica"), "us-other");
      assert.equal(data.model, "other-model");
    }
    const models = await client.models.list();
    assert.deepEqual(models.data.map((m) => m.id).sort(), [MODEL, "other-model"].sort());
  } finally {
    await balancer.close();
    await other.close();
  }
});
