// An agent's turn is often tool calls alone: the LB learns it as the next turn the client will send
// (the conversation, the assistant message carrying the calls, then the tool results), streamed or
// not, with text beside the calls or none, and a legacy function call (OpenAI's deprecated functions
// API) alike. After reasoning, the prompt alone is learned: the next turn renders no reasoning. Each test reads the engine's answer the way the LB does
// (the SSE observer, or the buffered body, through responseFacts) and checks the learned keys against
// the keys of the client's actual next request, parsed as the LB parses it.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { type BlockKey, type ChatMessageLike, chatSerialisedLength } from "@meridian/routing";
import { responseFacts } from "./completion";
import { nextTurnKeys, parseInference, type ParsedInference } from "./request";
import { SseObserver } from "./sse";
import type { ExchangeJob, UpstreamExchange } from "./upstream";

const tools = [
  { type: "function", function: { name: "read_file", description: "Reads a file of the repository.", parameters: { type: "object" } } },
  { type: "function", function: { name: "grep", description: "Searches the repository.", parameters: { type: "object" } } },
];
const conversation = [
  { role: "system", content: "You are a coding agent. Use the tools to answer. ".repeat(8) },
  { role: "user", content: "Where is the retry budget of the upstream client configured, and what is its default?" },
];
const firstTurn = { model: "m", messages: conversation, tools };

const CALLS = [
  { id: "call_a1", type: "function", function: { name: "grep", arguments: '{"pattern":"retryBudget","path":"packages/proxy/src"}' } },
  { id: "call_b2", type: "function", function: { name: "read_file", arguments: '{"path":"packages/proxy/src/upstream.ts","from":1,"to":120}' } },
] as const;
const TEXT = "Let me search the proxy's sources for the retry budget first, then read the client.";

function parse(body: unknown): ParsedInference {
  return parseInference("chat", Buffer.from(JSON.stringify(body)), undefined, 16);
}

/** vLLM's stream of a reply with `text` (empty: none) and CALLS: each call's id, type and name in its
 * first fragment, its arguments cut across several chunks, `id: null` on the later ones. */
function streamedAnswer(text: string): string[] {
  const event = (delta: unknown): string => `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
  const events = [event({ role: "assistant", content: "" })];
  for (let i = 0; i < text.length; i += 16) events.push(event({ content: text.slice(i, i + 16) }));
  CALLS.forEach((call, index) => {
    events.push(event({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }] }));
    const args = call.function.arguments;
    for (let i = 0; i < args.length; i += 7) events.push(event({ tool_calls: [{ index, id: null, function: { arguments: args.slice(i, i + 7) } }] }));
  });
  events.push(`data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] })}\n\n`, "data: [DONE]\n\n");
  return events;
}

/** What the LB reads off a finished stream (responseFacts of an exchange with this observer). */
function streamedFacts(events: readonly string[], maxReplyChars?: number) {
  const observer = new SseObserver({ stripUsage: false, onFirstContent: () => undefined, ...(maxReplyChars !== undefined ? { maxReplyChars } : {}) });
  for (const chunk of events) observer.push(Buffer.from(chunk));
  observer.end();
  return responseFacts({ observer, firstContentAt: null } as unknown as UpstreamExchange<ExchangeJob>);
}

/** What the LB reads off a finished non-streamed answer. */
function wholeFacts(message: unknown) {
  const body = JSON.stringify({ id: "chatcmpl-1", object: "chat.completion", choices: [{ index: 0, message, finish_reason: "tool_calls" }] });
  const exchange = {
    observer: null,
    ok: true,
    bodyPassedThrough: false,
    buffered: [Buffer.from(body)],
    firstByteAt: 1,
    firstContentAt: null,
    job: { request: { kind: "chat" } },
  };
  return responseFacts(exchange as unknown as UpstreamExchange<ExchangeJob>);
}

/** The client's next request: the conversation, the assistant message as it sends it back, then one
 * tool result per call, and a further user question. */
function nextTurn(assistant: unknown): ParsedInference {
  const results = CALLS.map((call) => ({ role: "tool", tool_call_id: call.id, content: `results of ${call.function.name}: `.repeat(6) }));
  return parse({ ...firstTurn, messages: [...conversation, assistant, ...results] });
}

/** The learned keys are the next request's up to the end of the assistant message: a prefix of its
 * keys, as deep as the full blocks of the prompt and that message go (past the prompt's). */
function assertLearnedAsNextTurn(learned: BlockKey[] | null, prompt: ParsedInference, assistant: ChatMessageLike, next: ParsedInference): void {
  assert.ok(learned !== null, "the tool-call reply was not learned");
  assert.ok(learned.length > prompt.keys.length, `learned ${learned.length} keys, the prompt has ${prompt.keys.length}`);
  assert.deepEqual(next.keys.slice(0, learned.length), learned);
  assert.equal(learned.length, Math.floor((prompt.promptChars + chatSerialisedLength([assistant])) / 64), "the tool calls were not learned");
  assert.ok(next.keys.length > learned.length);
}

test("a streamed tool-call reply (content null) is learned as the next turn the client sends", () => {
  const prompt = parse(firstTurn);
  const facts = streamedFacts(streamedAnswer(""));
  assert.equal(facts.reply, "");
  assert.deepEqual(facts.toolCalls, CALLS);
  // What OpenAI's SDKs send back after accumulating the stream (openai-node's finalChatCompletion).
  const assistant = { role: "assistant", content: null, refusal: null, tool_calls: CALLS };
  const learned = nextTurnKeys(prompt, facts.reply, facts.toolCalls);
  assertLearnedAsNextTurn(learned, prompt, assistant, nextTurn(assistant));
  // A client that rebuilds the message with content "" or none keys the same: the chat keys
  // serialise a null, an empty and a missing content alike, as nothing.
  assertLearnedAsNextTurn(learned, prompt, assistant, nextTurn({ role: "assistant", content: "", tool_calls: CALLS }));
  assertLearnedAsNextTurn(learned, prompt, assistant, nextTurn({ role: "assistant", tool_calls: CALLS }));
});

test("a streamed reply with text beside its tool calls is learned with both", () => {
  const prompt = parse(firstTurn);
  const facts = streamedFacts(streamedAnswer(TEXT));
  assert.equal(facts.reply, TEXT);
  const assistant = { role: "assistant", content: TEXT, tool_calls: CALLS };
  assertLearnedAsNextTurn(nextTurnKeys(prompt, facts.reply, facts.toolCalls), prompt, assistant, nextTurn(assistant));
});

test("a non-streamed tool-call reply is learned as the next turn, content null or with text", () => {
  const prompt = parse(firstTurn);
  for (const content of [null, TEXT]) {
    // vLLM's message; a client appends it to its messages as it came.
    const message = { role: "assistant", content, reasoning_content: null, tool_calls: CALLS };
    const facts = wholeFacts(message);
    assertLearnedAsNextTurn(nextTurnKeys(prompt, facts.reply, facts.toolCalls), prompt, message, nextTurn(message));
  }
});

test("tool calls the LB cannot put together, or past the reply bound, leave no reply (the prompt alone is learned)", () => {
  const event = (delta: unknown): string => `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`;
  const call = { id: "c1", type: "function", function: { name: "grep", arguments: "{}" } };
  // An index past the next one (a gap), a fragment without an index, a call that never got its id.
  for (const fragments of [[{ index: 1, ...call }], [{ ...call }], [{ index: 0, type: "function", function: { name: "grep", arguments: "{}" } }]]) {
    const facts = streamedFacts([event({ content: TEXT }), event({ tool_calls: fragments }), "data: [DONE]\n\n"]);
    assert.equal(facts.reply, "", JSON.stringify(fragments));
    assert.deepEqual(facts.toolCalls, []);
  }
  // Arguments past the bound: the reply is unknown, and nothing more is held.
  const endless = [event({ tool_calls: [{ index: 0, ...call, function: { name: "grep", arguments: "" } }] })];
  for (let i = 0; i < 50; i++) endless.push(event({ tool_calls: [{ index: 0, function: { arguments: "x".repeat(100) } }] }));
  const bounded = streamedFacts(endless, 1_000);
  assert.equal(bounded.reply, "");
  assert.deepEqual(bounded.toolCalls, []);
  // A non-streamed call of another tool type is not one the LB can send back.
  const custom = wholeFacts({ role: "assistant", content: TEXT, tool_calls: [{ ...call, type: "custom" }] });
  assert.deepEqual([custom.reply, custom.toolCalls], ["", []]);
});

// OpenAI's deprecated functions API: the request lists `functions`, the reply carries one
// `function_call`, and the client sends it back, then the function's result as a `function` message.
const functions = [{ name: "get_weather", description: "The weather of a city.", parameters: { type: "object" } }];
const legacyTurn = { model: "m", messages: conversation, functions };
const FUNCTION_CALL = { name: "get_weather", arguments: '{"city":"Oslo","unit":"celsius","days":3,"hourly":false}' };

function legacyNextTurn(assistant: unknown): ParsedInference {
  const result = { role: "function", name: FUNCTION_CALL.name, content: "Oslo: 4 °C, rain. ".repeat(6) };
  return parse({ ...legacyTurn, messages: [...conversation, assistant, result] });
}

test("a streamed function_call reply is learned as the next turn the client sends", () => {
  const prompt = parse(legacyTurn);
  // OpenAI's stream: the name in the first delta, the arguments across the later ones.
  const event = (delta: unknown, finish: string | null = null): string =>
    `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const events = [event({ role: "assistant", content: null, function_call: { name: FUNCTION_CALL.name, arguments: "" } })];
  for (let i = 0; i < FUNCTION_CALL.arguments.length; i += 5) events.push(event({ function_call: { arguments: FUNCTION_CALL.arguments.slice(i, i + 5) } }));
  events.push(event({}, "function_call"), "data: [DONE]\n\n");
  const facts = streamedFacts(events);
  assert.equal(facts.reply, "");
  // What openai-node's finalChatCompletion() hands the client, which it sends back as is.
  const assistant = { role: "assistant", content: null, refusal: null, function_call: FUNCTION_CALL };
  assertLearnedAsNextTurn(nextTurnKeys(prompt, facts.reply, facts.toolCalls), prompt, assistant, legacyNextTurn(assistant));
  // Past the reply's character bound the call is unknown, like a tool call's.
  const bounded = streamedFacts(events, FUNCTION_CALL.arguments.length);
  assert.deepEqual([bounded.reply, bounded.toolCalls], ["", []]);
});

test("a non-streamed function_call reply is learned as the next turn, content null or with text", () => {
  const prompt = parse(legacyTurn);
  for (const content of [null, TEXT]) {
    const message = { role: "assistant", content, function_call: FUNCTION_CALL };
    const facts = wholeFacts(message);
    assertLearnedAsNextTurn(nextTurnKeys(prompt, facts.reply, facts.toolCalls), prompt, message, legacyNextTurn(message));
  }
});

test("a function_call the LB cannot put together leaves no reply, though text came beside it", () => {
  const event = (delta: unknown): string => `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`;
  const toolCall = { index: 0, id: "c1", type: "function", function: { name: "grep", arguments: "{}" } };
  // Not an object, a name of the wrong type, no name, beside tool calls (either first).
  const cases: unknown[][] = [
    [{ function_call: "get_weather" }],
    [{ function_call: { name: 7, arguments: "{}" } }],
    [{ function_call: { arguments: "{}" } }],
    [{ function_call: FUNCTION_CALL }, { tool_calls: [toolCall] }],
    [{ tool_calls: [toolCall] }, { function_call: FUNCTION_CALL }],
  ];
  for (const deltas of cases) {
    const facts = streamedFacts([event({ content: TEXT }), ...deltas.map(event), "data: [DONE]\n\n"]);
    assert.deepEqual([facts.reply, facts.toolCalls], ["", []], JSON.stringify(deltas));
    // The same fields on a whole message.
    const message: unknown = Object.assign({ role: "assistant", content: TEXT }, ...deltas);
    const whole = wholeFacts(message);
    assert.deepEqual([whole.reply, whole.toolCalls], ["", []], JSON.stringify(message));
  }
});

test("tool calls after reasoning: the next turn's first keys are the prompt's, which is all the LB learns", () => {
  const prompt = parse(firstTurn);
  const event = (delta: unknown): string => `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`;
  const calls = CALLS.map((call, index) => ({ index, ...call }));
  // vLLM's reasoning parsers write reasoning_content (and, lately, `reasoning` too); SGLang the first.
  for (const reasoning of [{ reasoning_content: "The budget is a constant; grep for it." }, { reasoning: "Grep for it." }]) {
    const facts = streamedFacts([event(reasoning), event({ content: "\n\n" }), event({ tool_calls: calls }), "data: [DONE]\n\n"]);
    assert.deepEqual([facts.reply, facts.toolCalls], ["", []], JSON.stringify(reasoning));
    const whole = wholeFacts({ role: "assistant", content: null, ...reasoning, tool_calls: CALLS });
    assert.deepEqual([whole.reply, whole.toolCalls], ["", []], JSON.stringify(reasoning));
    // No reply: lb-core learns the prompt's keys, and the client's next turn, which sends the calls
    // back with or without the reasoning (the keys leave it out, as the templates of DeepSeek-R1
    // always and Qwen3 outside the agent loop do), starts with those keys (tool-calls.ts, clear()).
    for (const assistant of [
      { role: "assistant", content: null, tool_calls: CALLS },
      { role: "assistant", content: null, ...reasoning, tool_calls: CALLS },
    ]) {
      const next = nextTurn(assistant);
      assert.deepEqual(next.keys.slice(0, prompt.keys.length), prompt.keys);
      assert.ok(next.keys.length > prompt.keys.length);
    }
  }
});
