import { strict as assert } from "node:assert";
import { test } from "node:test";
import {
  chatBlockKeys,
  chatSerialisedLength,
  chatSessionKey,
  continueChatBlockKeys,
  continuePromptBlockKeys,
  promptBlockKeys,
  sessionKeyFromBlocks,
} from "@meridian/routing";
import { HttpError } from "./errors";
import { nextTurnKeys, parseInference, SESSION_ID_MAX_CHARS, upstreamBody as upstreamParts } from "./request";

const upstreamBody = (request: Parameters<typeof upstreamParts>[0]): Buffer => {
  const body = upstreamParts(request);
  return Array.isArray(body) ? Buffer.concat(body) : body;
};

const messages = [
  { role: "system", content: "You are terse. ".repeat(20) },
  { role: "user", content: "Hello there" },
];

test("parses a chat request once: keys, chars, session key, stream flags", () => {
  const raw = Buffer.from(JSON.stringify({ model: "m", messages, stream: true }));
  const parsed = parseInference("chat", raw, undefined, 16);
  assert.deepEqual(parsed.keys, chatBlockKeys(messages));
  assert.equal(parsed.model, "m");
  assert.equal(parsed.stream, true);
  assert.equal(parsed.clientWantsUsage, false);
  assert.ok(parsed.promptChars > 300);
  assert.ok(parsed.sessionKey.length > 0);
  assert.equal(parseInference("chat", Buffer.from(JSON.stringify({ messages, user: "u1" })), undefined, 16).sessionKey, "user:u1");
  assert.equal(parseInference("chat", Buffer.from(JSON.stringify({ messages })), "s9", 16).sessionKey, "session:s9");
});

test("a long user or x-session-id is keyed by its digest: the key stays short, and the same id keeps its conversation together", () => {
  const sessionKey = (fields: Record<string, unknown>, header?: string): string =>
    parseInference("chat", Buffer.from(JSON.stringify({ messages, ...fields })), header, 16).sessionKey;
  const longest = "u".repeat(SESSION_ID_MAX_CHARS);
  assert.equal(sessionKey({ user: longest }), `user:${longest}`);
  assert.equal(sessionKey({}, longest), `session:${longest}`);
  const huge = "u".repeat(100_000);
  const key = sessionKey({ user: huge });
  assert.match(key, /^user:sha256:[0-9a-f]{64}$/);
  assert.equal(sessionKey({ user: huge, temperature: 0 }), key);
  assert.notEqual(sessionKey({ user: `${huge}v` }), key);
  assert.match(sessionKey({ user: `${longest}u` }), /^user:sha256:[0-9a-f]{64}$/);
  assert.match(sessionKey({}, huge), /^session:sha256:[0-9a-f]{64}$/);
  assert.equal(sessionKey({}, huge), sessionKey({}, huge));
});

test("a chat naming no session is keyed by its conversation: apart from the agent's other conversations, the same at every turn", () => {
  const sessionKey = (body: Record<string, unknown>, header?: string): string =>
    parseInference("chat", Buffer.from(JSON.stringify(body)), header, 16).sessionKey;
  // Two conversations of one agent: a 20,000-character system prompt and one tool set, different tasks.
  const system = { role: "system", content: "You are a coding agent. Read before you edit. ".repeat(435) };
  const tools = [{ type: "function", function: { name: "read_file", description: "Reads a file.", parameters: { type: "object" } } }];
  const fix = [system, { role: "user", content: "Fix the flaky retry test." }];
  const metric = [system, { role: "user", content: "Add a queue-wait metric." }];
  assert.notEqual(sessionKey({ messages: fix, tools }), sessionKey({ messages: metric, tools }));
  assert.equal(sessionKey({ messages: fix, tools }), chatSessionKey(fix, { tools }, 16));
  // One conversation whose first turn is shorter than 16 blocks keeps its key at turns 2 and 3.
  const turn1 = [...messages];
  const turn2 = [...turn1, { role: "assistant", content: "General Kenobi. ".repeat(40) }, { role: "user", content: "Tell me about caching." }];
  const turn3 = [...turn2, { role: "assistant", content: "It saves prefill." }, { role: "user", content: "Thanks." }];
  assert.equal(sessionKey({ messages: turn2 }), sessionKey({ messages: turn1 }));
  assert.equal(sessionKey({ messages: turn3 }), sessionKey({ messages: turn1 }));
  // An explicit session still wins; a completion is still keyed by its first blocks.
  assert.equal(sessionKey({ messages: fix, tools, user: "u1" }), "user:u1");
  assert.equal(sessionKey({ messages: fix, tools }, "s9"), "session:s9");
  const prompt = "Once upon a time, ".repeat(80);
  assert.equal(
    parseInference("completion", Buffer.from(JSON.stringify({ prompt })), undefined, 16).sessionKey,
    sessionKeyFromBlocks(promptBlockKeys(prompt), 16),
  );
});

test("keeps the keyer state, so the next turn is keyed from the reply alone with the same keys", () => {
  const parsed = parseInference("chat", Buffer.from(JSON.stringify({ messages })), undefined, 16);
  const reply = { role: "assistant", content: "Hi! Here is a longer answer, long enough to complete a block or two. ".repeat(3) };
  const added = continueChatBlockKeys(parsed.keyerState!, [reply]).keys;
  assert.ok(added.length > 0);
  assert.deepEqual([...parsed.keys, ...added], chatBlockKeys([...messages, reply]));
  const prompt = "Once upon a time, ".repeat(12);
  const completion = parseInference("completion", Buffer.from(JSON.stringify({ prompt })), undefined, 16);
  const more = continuePromptBlockKeys(completion.keyerState!, " there was a load balancer.".repeat(4)).keys;
  assert.deepEqual([...completion.keys, ...more], promptBlockKeys(prompt + " there was a load balancer.".repeat(4)));
});

test("bad input is a 400 naming the field", () => {
  const cases: [string, string | null][] = [
    ["{not json", null],
    ["[1,2]", null],
    [JSON.stringify({ model: "m" }), "messages"],
    [JSON.stringify({ messages: [] }), "messages"],
    [JSON.stringify({ messages: [{ content: "x" }] }), "messages[0].role"],
    [JSON.stringify({ messages, model: 5 }), "model"],
  ];
  for (const [body, param] of cases) {
    assert.throws(
      () => parseInference("chat", Buffer.from(body), undefined, 16),
      (error: unknown) => error instanceof HttpError && error.status === 400 && error.param === param,
      body,
    );
  }
  assert.throws(
    () => parseInference("completion", Buffer.from("{}"), undefined, 16),
    (e: unknown) => e instanceof HttpError && e.param === "prompt",
  );
});

test("streams ask upstream for usage; the splice keeps the body valid and the client's fields intact", () => {
  const plain = { model: "m", messages, stream: true, temperature: 0 };
  const spliced = JSON.parse(upstreamBody(parseInference("chat", Buffer.from("  " + JSON.stringify(plain)), undefined, 16)).toString());
  assert.deepEqual(spliced, { ...plain, stream_options: { include_usage: true } });
  const withOptions = { ...plain, stream_options: { include_usage: false, extra: 1 } };
  const rewritten = JSON.parse(upstreamBody(parseInference("chat", Buffer.from(JSON.stringify(withOptions)), undefined, 16)).toString());
  assert.deepEqual(rewritten.stream_options, { include_usage: true, extra: 1 });
  const raw = Buffer.from(JSON.stringify({ messages, stream: true, stream_options: { include_usage: true } }));
  assert.equal(upstreamBody(parseInference("chat", raw, undefined, 16)), raw);
  const nonStream = Buffer.from(JSON.stringify({ messages }));
  assert.equal(upstreamBody(parseInference("chat", nonStream, undefined, 16)), nonStream);
});

test("prompt chars match the keyer's block count (next-turn learning relies on it)", () => {
  for (const size of [0, 10, 63, 64, 65, 500, 4097]) {
    const msgs = [
      { role: "system", content: "s".repeat(size) },
      { role: "user", content: "question?" },
    ];
    const parsed = parseInference("chat", Buffer.from(JSON.stringify({ messages: msgs })), undefined, 16);
    assert.equal(parsed.keys.length, Math.floor(parsed.promptChars / 64));
    const reply = "r".repeat(size % 97);
    const next = chatBlockKeys([...msgs, { role: "assistant", content: reply }]);
    assert.equal(next.length, Math.floor((parsed.promptChars + "assistant".length + 2 + reply.length) / 64));
  }
});

test("a batch completion prompt is keyed by its first prompt, sized by all of them", () => {
  const a = "The quick brown fox jumps over the lazy dog. ".repeat(4);
  const b = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(4);
  const batch = parseInference("completion", Buffer.from(JSON.stringify({ model: "m", prompt: [a, b] })), undefined, 4);
  // The engine prefills a and b apart: no block straddling them exists in its cache.
  assert.deepEqual(batch.keys, promptBlockKeys(a));
  assert.equal(batch.promptChars, a.length + b.length);
  // Choice 0 is a's reply: the next turn is a + that reply.
  const reply = "It is a pangram, used to show every letter of the alphabet in one sentence.";
  assert.deepEqual(nextTurnKeys(batch, reply), promptBlockKeys(a + reply));
});

test("a chat's tools are counted and keyed with its prompt, and its next turn continues them", () => {
  const tools = [{ type: "function", function: { name: "read_file", description: "Reads a file. ".repeat(20), parameters: { type: "object" } } }];
  const parsed = parseInference("chat", Buffer.from(JSON.stringify({ model: "m", messages, tools })), undefined, 16);
  // The chat template renders the tools into the prompt: the engine's prompt_tokens count them.
  assert.equal(parsed.promptChars, chatSerialisedLength(messages) + JSON.stringify(tools).length + "tools:".length + 2);
  assert.deepEqual(parsed.keys, chatBlockKeys(messages, 64, { tools }));
  const reply = "Opening it now, then I will summarise the sections one by one. ".repeat(3);
  const next = [...messages, { role: "assistant", content: reply }];
  assert.deepEqual(nextTurnKeys(parsed, reply), chatBlockKeys(next, 64, { tools }));
  assert.deepEqual(nextTurnKeys({ ...parsed, keyerState: undefined }, reply), chatBlockKeys(next, 64, { tools }));
  assert.throws(
    () => parseInference("chat", Buffer.from(JSON.stringify({ messages, tools: { type: "function" } })), undefined, 16),
    (e: unknown) => e instanceof HttpError && e.status === 400 && e.param === "tools",
  );
});

test("an echoed completion is learned as prompt + completion, not prompt + prompt + completion", () => {
  const prompt = "The history of the lighthouse at Alexandria begins with Ptolemy. ".repeat(12);
  const generated = " It stood for centuries and guided ships into the harbour safely. ".repeat(6);
  const echoed = parseInference("completion", Buffer.from(JSON.stringify({ model: "m", prompt, echo: true, max_tokens: 100 })), undefined, 4);
  // choices[0].text of an echoed completion is prompt + completion (OpenAI, vLLM).
  assert.deepEqual(nextTurnKeys(echoed, prompt + generated), promptBlockKeys(prompt + generated));
  // Scoring only (max_tokens 0): the text is the prompt; nothing to learn beyond it.
  const scored = parseInference("completion", Buffer.from(JSON.stringify({ prompt, echo: true, max_tokens: 0 })), undefined, 4);
  assert.equal(scored.maxOutputTokens, 0);
  assert.equal(nextTurnKeys(scored, prompt), null);
  // A text that does not start with the prompt is not learned past the prompt.
  assert.equal(nextTurnKeys(echoed, generated), null);
  // Without echo the reply is the completion alone, as before.
  const plain = parseInference("completion", Buffer.from(JSON.stringify({ prompt })), undefined, 4);
  assert.deepEqual(nextTurnKeys(plain, generated), promptBlockKeys(prompt + generated));
});

test("a token-id prompt is counted and keyed 4 characters an id, a batch by its first prompt; no reply extends it", () => {
  const ids = Array.from({ length: 40 }, (_, i) => 1000 + i * 37);
  const one = parseInference("completion", Buffer.from(JSON.stringify({ prompt: ids })), undefined, 4);
  assert.equal(one.promptChars, 160);
  // 16 ids a 64-character block: the keys are as deep as the estimate.
  assert.equal(one.keys.length, Math.floor(one.promptChars / 64));
  const other = parseInference("completion", Buffer.from(JSON.stringify({ prompt: [...ids.slice(0, 16), 7, ...ids.slice(17)] })), undefined, 4);
  assert.equal(other.keys[0], one.keys[0], "the same first 16 ids share a block");
  assert.notEqual(other.keys[1], one.keys[1]);
  const batch = parseInference("completion", Buffer.from(JSON.stringify({ prompt: [ids, [1, 2]] })), undefined, 4);
  assert.deepEqual(batch.keys, one.keys);
  assert.equal(batch.promptChars, 168);
  assert.equal(nextTurnKeys(one, "a reply in text the LB cannot turn into ids ".repeat(4)), null);
});

test("a body that is not UTF-8 is a 400 invalid_json, whole or split across socket chunks", () => {
  const bytes = Buffer.concat([Buffer.from('{"messages":[{"role":"user","content":"a'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}]}')]);
  for (const raw of [bytes, [bytes.subarray(0, 40), bytes.subarray(40)]]) {
    assert.throws(
      () => parseInference("chat", raw, undefined, 16),
      (e: unknown) => e instanceof HttpError && e.status === 400 && e.code === "invalid_json" && /UTF-8/.test(e.message),
    );
  }
  // A byte order mark stays refused, as JSON.parse refuses it.
  assert.throws(
    () => parseInference("chat", Buffer.from(`\ufeff${JSON.stringify({ messages })}`), undefined, 16),
    (e: unknown) => e instanceof HttpError && e.code === "invalid_json",
  );
});

test("a body in several socket chunks (split inside a UTF-8 character) parses and splices without copying", () => {
  const text = JSON.stringify({ messages: [{ role: "user", content: "Grüße aus Köln — ".repeat(20) }], stream: true });
  const bytes = Buffer.from("  \n" + text);
  const cut = bytes.indexOf(Buffer.from("ü")) + 1; // inside the two-byte ü
  const parts = [bytes.subarray(0, 2), bytes.subarray(2, cut), bytes.subarray(cut)];
  const parsed = parseInference("chat", parts, undefined, 16);
  assert.equal(parsed.rawLength, bytes.length);
  assert.equal(String(parsed.messages?.[0]?.content).slice(0, 5), "Grüße");
  const spliced = upstreamParts(parsed);
  assert.ok(Array.isArray(spliced));
  assert.deepEqual(JSON.parse(Buffer.concat(spliced).toString()), { ...JSON.parse(text), stream_options: { include_usage: true } });
});

test("a chat's documents (vLLM, rendered by RAG templates) are keyed: two requests differing only in them part after the system prompt", () => {
  const documents = (topic: string) => [{ doc_id: "1", text: `Notes on ${topic}. `.repeat(30), title: "notes" }];
  const chat = (extra: Record<string, unknown>) => parseInference("chat", Buffer.from(JSON.stringify({ model: "m", messages, ...extra })), undefined, 16);
  const a = chat({ documents: documents("tides") });
  const b = chat({ documents: documents("winds") });
  const systemBlocks = Math.floor(chatSerialisedLength(messages.slice(0, 1)) / 64);
  assert.deepEqual(a.keys.slice(0, systemBlocks), b.keys.slice(0, systemBlocks));
  assert.notEqual(a.keys[systemBlocks + 1], b.keys[systemBlocks + 1]);
  assert.ok(a.promptChars > chat({}).promptChars + documents("tides")[0]!.text.length, "the documents are counted");
  // response_format constrains decoding only: the prompt, and so the keys, are the same.
  assert.deepEqual(chat({ response_format: { type: "json_object" } }).keys, chat({}).keys);
  // The next turn keyed from scratch keeps the documents too.
  const reply = "The tides follow the moon, twice a day. ".repeat(4);
  assert.deepEqual(nextTurnKeys({ ...a, keyerState: undefined }, reply), nextTurnKeys(a, reply));
  assert.throws(
    () => chat({ documents: "not a list" }),
    (e: unknown) => e instanceof HttpError && e.status === 400 && e.param === "documents",
  );
});
