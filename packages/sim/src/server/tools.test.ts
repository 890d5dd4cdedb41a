// A chat prompt is what vLLM and SGLang hand the chat template: the request's `tools` and every
// message as sent (an assistant's tool calls, a tool result's id). The engine counts and caches that
// prompt, as the LB keys it (@meridian/routing's chat keyer), so its prompt_tokens and cached_tokens
// answer for the prompt the LB predicted for.
import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { chatSerialisedLength, DEFAULT_BLOCK_CHARS } from "@meridian/routing";
import { startEngineServer, type EngineServer } from "./index";

const CHAT_BLOCK_TOKENS = DEFAULT_BLOCK_CHARS / 4;

let server: EngineServer;
before(async () => {
  server = await startEngineServer({ id: "e1", region: "local" });
});
after(() => server.close());

interface Reply {
  content: string;
  usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
}

async function chat(body: Record<string, unknown>): Promise<Reply> {
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ max_tokens: 4, ...body }),
  });
  assert.equal(res.status, 200);
  const json = (await res.json()) as { choices: { message: { content: string } }[]; usage: Reply["usage"] };
  return { content: json.choices[0]!.message.content, usage: json.usage };
}

/** A tool with ~2 KB of schema; its JSON (keys sorted) starts with the description. */
const tool = (name: string, about = "d") => ({
  type: "function",
  function: { name, description: about.repeat(2000), parameters: { type: "object", properties: { q: { type: "string" } } } },
});

const tokensOf = (chars: number): number => Math.ceil(chars / 4);
const fullBlockTokens = (chars: number): number => Math.floor(chars / DEFAULT_BLOCK_CHARS) * CHAT_BLOCK_TOKENS;

it("counts the request's tools and an assistant's tool calls in prompt_tokens", async () => {
  const messages = [
    { role: "system", content: "You are a travel agent. ".repeat(20) },
    { role: "user", content: "Book me a train from Seoul to Busan tomorrow morning. ".repeat(4) },
  ];
  const tools = [tool("book_train")];
  const plain = await chat({ messages });
  const withTools = await chat({ messages, tools });
  assert.equal(withTools.usage.prompt_tokens, tokensOf(chatSerialisedLength(messages, { tools })));
  assert.ok(
    withTools.usage.prompt_tokens > plain.usage.prompt_tokens + 500,
    `${withTools.usage.prompt_tokens} with 2 KB of tools, ${plain.usage.prompt_tokens} without`,
  );

  const agentTurn = [
    ...messages,
    {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "call_1", type: "function", function: { name: "book_train", arguments: JSON.stringify({ q: "Seoul to Busan, 08:00, one adult, window seat" }) } },
      ],
    },
    { role: "tool", tool_call_id: "call_1", content: "Booked: KTX 101, car 4, seat 12A." },
  ];
  const next = await chat({ messages: agentTurn, tools });
  assert.equal(next.usage.prompt_tokens, tokensOf(chatSerialisedLength(agentTurn, { tools })));
});

it("serves a request with another tool set from the cache only up to the system prompt, and the next turn of the same tools from all of it", async () => {
  const messages = [
    { role: "system", content: "You are a weather agent. ".repeat(20) },
    { role: "user", content: "Find the weather in Seoul and in Frankfurt, then compare them. ".repeat(4) },
  ];
  const first = await chat({ messages, tools: [tool("weather", "a")] });
  const other = await chat({ messages, tools: [tool("weather", "b")] });
  // The template renders the tools right after the system message, and these two differ from their
  // first description character on: the system prompt's blocks are shared, and no block past the
  // one the tools start in.
  const cached = other.usage.prompt_tokens_details.cached_tokens;
  assert.ok(cached <= fullBlockTokens(chatSerialisedLength(messages.slice(0, 1)) + DEFAULT_BLOCK_CHARS), `${cached} of ${other.usage.prompt_tokens} cached`);

  // The next turn of the first conversation, same tools: everything the first request and its reply
  // filled whole blocks with is cached.
  const answered = [...messages, { role: "assistant", content: first.content }];
  const turn2 = await chat({ messages: [...answered, { role: "user", content: "And in Busan?" }], tools: [tool("weather", "a")] });
  assert.equal(turn2.usage.prompt_tokens_details.cached_tokens, fullBlockTokens(chatSerialisedLength(answered, { tools: [tool("weather", "a")] })));
});
