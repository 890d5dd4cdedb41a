import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { MAX_PARTIAL_EVENT_BYTES, readCompletionBody, SseObserver, sseErrorEvent } from "./sse";

const recorded = readFileSync(new URL("../test/fixtures/sse-openai-gpt5nano-include-usage.txt", import.meta.url));

function run(bytes: Buffer, stripUsage: boolean, chunkSize: number): { out: string; observer: SseObserver; firsts: number } {
  let firsts = 0;
  const observer = new SseObserver({ stripUsage, onFirstContent: () => firsts++ });
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += chunkSize) parts.push(observer.push(bytes.subarray(i, i + chunkSize)));
  parts.push(observer.end());
  return { out: Buffer.concat(parts).toString("utf8"), observer, firsts };
}

test("passes the recorded OpenAI stream through byte for byte and reads its usage", () => {
  for (const size of [1, 7, 64, recorded.length]) {
    const { out, observer } = run(recorded, false, size);
    assert.equal(out, recorded.toString("utf8"));
    assert.deepEqual(observer.usage, { promptTokens: 12, completionTokens: 100, cachedTokens: 0 });
    assert.equal(observer.done, true);
    assert.equal(observer.content, "");
  }
});

test("strips the usage-only chunk when the client did not ask for it, at any chunking", () => {
  const expected = recorded
    .toString("utf8")
    .split("\n\n")
    .filter((event) => !event.includes('"choices":[]'))
    .join("\n\n");
  for (const size of [1, 3, 50, recorded.length]) {
    const { out, observer } = run(recorded, true, size);
    assert.equal(out, expected);
    assert.ok(out.endsWith("data: [DONE]\n\n"));
    assert.equal(observer.usage?.promptTokens, 12);
  }
});

test("accumulates content, signals the first content delta once, handles multibyte splits", () => {
  const events = ["Grüße", " 世界", "!"].map((piece) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: piece } }] })}\n\n`);
  const usage = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "" }, finish_reason: "stop" }], usage: { prompt_tokens: 5, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 2 } } })}\n\n`;
  const bytes = Buffer.from(
    `data: ${JSON.stringify({ choices: [{ delta: { role: "assistant", content: "" } }] })}\n\n` + events.join("") + usage + "data: [DONE]\n\n",
  );
  for (const size of [1, 2, 5, bytes.length]) {
    const { out, observer, firsts } = run(bytes, true, size);
    assert.equal(firsts, 1);
    assert.equal(observer.content, "Grüße 世界!");
    assert.equal(observer.usage?.cachedTokens, 2);
    // Usage rode on a content chunk: the chunk stays, without its usage field.
    assert.ok(!out.includes("prompt_tokens"));
    assert.ok(out.includes('"finish_reason":"stop"'));
  }
});

test("completion text chunks (v1/completions) count as content", () => {
  const bytes = Buffer.from(`data: {"choices":[{"text":"abc","index":0}]}\r\n\r\ndata: [DONE]\r\n\r\n`);
  const { out, observer, firsts } = run(bytes, false, 4);
  assert.equal(out, bytes.toString());
  assert.equal(observer.content, "abc");
  assert.equal(firsts, 1);
});

test("reads a recorded non-streaming completion", () => {
  const body = readFileSync(new URL("../test/fixtures/completion-openai-gpt5nano-recorded.json", import.meta.url), "utf8");
  const parsed = readCompletionBody(body);
  assert.ok(parsed.content.startsWith("Hi there!"));
  assert.deepEqual(parsed.usage, { promptTokens: 8, completionTokens: 377, cachedTokens: 0 });
  assert.equal(parsed.output, true);
  assert.deepEqual(readCompletionBody("not json"), { content: "", toolCalls: [], usage: null, output: false });
});

test("the first generated token of any kind starts the time to first token: a tool call, reasoning, text", () => {
  const event = (delta: unknown) => `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`;
  const role = { role: "assistant", content: "" };
  // Each stream's deltas, and which of them holds its first generated token.
  const streams: Record<string, { deltas: unknown[]; first: number }> = {
    "tool call": {
      deltas: [
        role,
        { content: null, tool_calls: [{ index: 0, id: "c1", type: "function", function: { name: "get_weather", arguments: "" } }] },
        { tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] },
      ],
      first: 1,
    },
    "legacy function call": { deltas: [{ role: "assistant", content: null, function_call: { name: "f", arguments: "" } }], first: 0 },
    "reasoning_content (vLLM, SGLang)": {
      deltas: [role, { reasoning_content: "Let me think" }, { reasoning_content: "..." }, { content: "Paris." }],
      first: 1,
    },
    reasoning: { deltas: [{ role: "assistant", content: "", reasoning: "Hmm" }, { content: "ok" }], first: 0 },
    content: { deltas: [role, { content: null, tool_calls: [] }, {}, { content: "Hi" }], first: 3 },
  };
  for (const [name, { deltas, first }] of Object.entries(streams)) {
    let signalledAt: number | null = null;
    let pushed = 0;
    let firsts = 0;
    const observer = new SseObserver({
      stripUsage: false,
      onFirstContent: () => {
        firsts++;
        signalledAt ??= pushed;
      },
    });
    for (const delta of deltas) {
      observer.push(Buffer.from(event(delta)));
      pushed++;
    }
    observer.push(Buffer.from("data: [DONE]\n\n"));
    observer.end();
    assert.equal(firsts, 1, name);
    assert.equal(signalledAt, first, `${name}: the clock started at event ${signalledAt}, its first token is in event ${first}`);
  }
});

test("a non-streamed answer holding only a tool call or reasoning holds generated output; the reply is the content and the tool calls", () => {
  const body = (message: unknown) => JSON.stringify({ choices: [{ index: 0, message, finish_reason: "stop" }] });
  const toolCall = { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] };
  assert.deepEqual(readCompletionBody(body(toolCall)), { content: "", toolCalls: toolCall.tool_calls, usage: null, output: true });
  assert.deepEqual(readCompletionBody(body({ role: "assistant", content: "", reasoning_content: "thinking" })), {
    content: "",
    toolCalls: [],
    usage: null,
    output: true,
  });
  assert.deepEqual(readCompletionBody(body({ role: "assistant", content: "ok" })), { content: "ok", toolCalls: [], usage: null, output: true });
  assert.equal(readCompletionBody(body({ role: "assistant", content: "" })).output, false);
  assert.equal(readCompletionBody(JSON.stringify({ choices: [{ index: 0, text: "abc" }] })).output, true);
});

test("a usage count no engine could send (negative, a string, 1e400) is read as unreported", () => {
  const body = JSON.stringify({
    choices: [{ message: { content: "ok" } }],
    usage: { prompt_tokens: -3, completion_tokens: "7", prompt_tokens_details: { cached_tokens: -1 } },
  });
  assert.deepEqual(readCompletionBody(body).usage, { promptTokens: null, completionTokens: null, cachedTokens: null });
  const infinite =
    '{"choices":[{"message":{"content":"ok"}}],"usage":{"prompt_tokens":1e400,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}}';
  assert.deepEqual(readCompletionBody(infinite).usage, { promptTokens: null, completionTokens: 2, cachedTokens: 0 });
});

test("forwards whole events only, so an error event can always follow what went out", () => {
  const events = Array.from({ length: 5 }, (_, i) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: `p${i} é` } }] })}\n\n`).join("");
  const bytes = Buffer.from(events);
  for (const stripUsage of [false, true]) {
    for (const size of [1, 3, 17, 64]) {
      const observer = new SseObserver({ stripUsage, onFirstContent: () => undefined });
      let forwarded = "";
      for (let i = 0; i < bytes.length; i += size) {
        forwarded += observer.push(bytes.subarray(i, i + size)).toString("utf8");
        // Whatever went out so far ends on an event boundary.
        assert.ok(forwarded === "" || forwarded.endsWith("\n\n"), `size ${size}: ${JSON.stringify(forwarded.slice(-20))}`);
      }
      forwarded += observer.end().toString("utf8");
      assert.equal(forwarded, events);
    }
  }
  // A chunk that ends on a boundary goes out as the very same buffer (no copy on the common path).
  const observer = new SseObserver({ stripUsage: false, onFirstContent: () => undefined });
  assert.equal(observer.push(bytes), bytes);
});

test("an unterminated last event still goes out at the end of the stream", () => {
  const observer = new SseObserver({ stripUsage: false, onFirstContent: () => undefined });
  assert.equal(observer.push(Buffer.from("data: [DONE]")).length, 0);
  assert.equal(observer.end().toString(), "data: [DONE]");
});

test("with n > 1 the reply is the first choice's", () => {
  const bytes = Buffer.from(
    [0, 1, 0, 1].map((index, i) => `data: ${JSON.stringify({ choices: [{ index, delta: { content: `${index}:${i} ` } }] })}\n\n`).join(""),
  );
  const { observer } = run(bytes, false, bytes.length);
  assert.equal(observer.content, "0:0 0:2 ");
});

test("an endless reply is kept only up to the bound and is then unknown; every event still goes through", () => {
  // 100 deltas of 1,000 characters against a bound of 10,000: an engine that never stops.
  const delta = (i: number) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: String(i % 10).repeat(1_000) } }] })}\n\n`;
  const observer = new SseObserver({ stripUsage: false, onFirstContent: () => undefined, maxReplyChars: 10_000 });
  let forwarded = 0;
  for (let i = 0; i < 100; i++) forwarded += observer.push(Buffer.from(delta(i))).length;
  forwarded += observer.end().length;
  assert.equal(
    forwarded,
    Array.from({ length: 100 }, (_, i) => Buffer.byteLength(delta(i))).reduce((a, b) => a + b),
  );
  assert.equal(observer.contentEvents, 100);
  assert.equal(observer.replyTruncated, true);
  assert.ok(observer.content.length <= 10_000, `kept ${observer.content.length} characters`);
  // A reply within the bound is kept whole.
  const short = new SseObserver({ stripUsage: false, onFirstContent: () => undefined, maxReplyChars: 10_000 });
  short.push(Buffer.from(delta(1)));
  assert.equal(short.replyTruncated, false);
  assert.equal(short.content.length, 1_000);
});

test("an upstream's error event marks the stream failed and goes through; a whole stream is not marked", () => {
  const cut = Buffer.from(
    `data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n${sseErrorEvent("replica eu-1 failed mid-stream", "server_error", "upstream_error").toString()}`,
  );
  for (const stripUsage of [false, true]) {
    for (const size of [1, 5, cut.length]) {
      const { out, observer } = run(cut, stripUsage, size);
      assert.equal(out, cut.toString("utf8"), "the client gets the error event as sent");
      assert.equal(observer.streamError, "replica eu-1 failed mid-stream");
      assert.equal(observer.content, "hi");
    }
    assert.equal(run(recorded, stripUsage, 64).observer.streamError, null);
  }
  assert.equal(run(Buffer.from('data: {"error":"overloaded"}\n\n'), false, 64).observer.streamError, "overloaded");
});

test("the error event carries an OpenAI-shaped error", () => {
  const text = sseErrorEvent("upstream replica failed mid-stream", "server_error", "upstream_error").toString();
  assert.ok(text.startsWith("data: ") && text.endsWith("\n\n"));
  assert.deepEqual(JSON.parse(text.slice(6)), {
    error: { message: "upstream replica failed mid-stream", type: "server_error", code: "upstream_error", param: null },
  });
});

test("a blank line split across chunks of any size still ends its event (CRLF too)", () => {
  const bytes = Buffer.from(`data: {"choices":[{"text":"é","index":0}]}\r\n\r\ndata: {"choices":[{"text":"f","index":0}]}\n\ndata: [DONE]\r\n\r\n`);
  for (const stripUsage of [false, true]) {
    for (const size of [1, 2, 3, 5]) {
      const observer = new SseObserver({ stripUsage, onFirstContent: () => undefined });
      const parts: string[] = [];
      for (let i = 0; i < bytes.length; i += size) parts.push(observer.push(bytes.subarray(i, i + size)).toString("utf8"));
      assert.equal(parts.join(""), bytes.toString("utf8"), `stripUsage ${stripUsage}, size ${size}`);
      assert.equal(observer.end().length, 0);
      assert.equal(observer.content, "éf");
    }
  }
});

/** Counts the characters String#indexOf looks at and the bytes Buffer.concat copies while `run` runs. */
function measureWork(run: () => void): { scannedChars: number; copiedBytes: number } {
  const indexOf = String.prototype.indexOf;
  const concat = Buffer.concat;
  const work = { scannedChars: 0, copiedBytes: 0 };
  String.prototype.indexOf = function (this: string, search: string, from?: number) {
    work.scannedChars += this.length - Math.max(0, from ?? 0);
    return indexOf.call(this, search, from);
  };
  Buffer.concat = (list: readonly Uint8Array[], length?: number) => {
    const out = concat(list, length);
    work.copiedBytes += out.length;
    return out;
  };
  try {
    run();
  } finally {
    String.prototype.indexOf = indexOf;
    Buffer.concat = concat;
  }
  return work;
}

test("a long event (or none ending) is searched and copied once, not once per chunk", () => {
  const chunk = Buffer.from(`data: ${"g".repeat(16 * 1024 - 7)}\n`); // single newlines: no event ends
  const count = 128; // 2 MiB, under the cap
  const fed = chunk.length * count;
  for (const stripUsage of [false, true]) {
    const observer = new SseObserver({ stripUsage, onFirstContent: () => undefined });
    let forwarded = 0;
    const work = measureWork(() => {
      for (let i = 0; i < count; i++) forwarded += observer.push(chunk).length;
      forwarded += observer.push(Buffer.from("\n")).length; // the blank line at last
    });
    assert.equal(forwarded, fed + 1, `stripUsage ${stripUsage}`);
    // Each byte is looked at and copied a small constant number of times; the old observer re-read
    // and re-copied all it held on every chunk (count / 2 times each on average).
    assert.ok(work.scannedChars <= 4 * fed, `stripUsage ${stripUsage}: ${work.scannedChars} characters searched for ${fed} fed`);
    assert.ok(work.copiedBytes <= 2 * fed, `stripUsage ${stripUsage}: ${work.copiedBytes} bytes copied for ${fed} fed`);
  }
});

test("a partial event past MAX_PARTIAL_EVENT_BYTES is given up: nothing held, nothing more forwarded", () => {
  const chunk = Buffer.from(`data: ${"g".repeat(64 * 1024 - 7)}\n`);
  const event = Buffer.from(`${sseChunkOf("before")}`);
  for (const stripUsage of [false, true]) {
    const observer = new SseObserver({ stripUsage, onFirstContent: () => undefined });
    assert.equal(observer.push(event).toString(), event.toString());
    let fed = 0;
    while (fed <= MAX_PARTIAL_EVENT_BYTES) {
      assert.equal(observer.tooLarge, false);
      assert.equal(observer.push(chunk).length, 0);
      fed += chunk.length;
    }
    assert.equal(observer.tooLarge, true, `stripUsage ${stripUsage}`);
    // Whatever comes next (even a boundary) is not read: the exchange fails the stream.
    assert.equal(observer.push(Buffer.from(`\n\n${sseChunkOf("after")}`)).length, 0);
    assert.equal(observer.end().length, 0);
    assert.equal(observer.content, "before");
  }
});

test("an event under the cap arriving in many chunks goes out whole, once", () => {
  const event = Buffer.from(sseChunkOf("x".repeat(1024 * 1024)));
  for (const stripUsage of [false, true]) {
    const { out, observer } = run(event, stripUsage, 16 * 1024);
    assert.equal(out, event.toString());
    assert.equal(observer.content.length, 1024 * 1024);
  }
});

function sseChunkOf(content: string): string {
  return `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;
}

test("an event of exactly MAX_PARTIAL_EVENT_BYTES passes however the network splits its blank line", () => {
  const prefix = "data: ";
  const event = Buffer.from(prefix + "x".repeat(MAX_PARTIAL_EVENT_BYTES - prefix.length));
  for (const chunks of [
    [event, Buffer.from("\n\n")],
    [Buffer.concat([event, Buffer.from("\n")]), Buffer.from("\n")],
  ]) {
    const observer = new SseObserver({ stripUsage: false, onFirstContent: () => undefined });
    let out = 0;
    for (const chunk of chunks) out += observer.push(chunk).length;
    assert.equal(observer.tooLarge, false);
    assert.equal(out, event.length + 2);
  }
});

test("a reply after reasoning is not kept for next-turn learning: templates drop the reasoning from the history", () => {
  const event = (delta: Record<string, unknown>) => `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`;
  const bytes = Buffer.from(
    event({ role: "assistant", content: "" }) +
      event({ reasoning_content: "The user wants a greeting." }) +
      event({ content: "Hello" }) +
      event({ content: " there" }) +
      "data: [DONE]\n\n",
  );
  const { observer, firsts } = run(bytes, false, 16);
  assert.equal(observer.reasoningSeen, true);
  assert.equal(observer.content, "", "the next turn would be learned as prompt + answer, blocks the engine never holds");
  // The reasoning is output all the same: without usage, its event counts as a token.
  assert.equal(observer.contentEvents, 3);
  assert.equal(firsts, 1);
  // SGLang's parser names the field `reasoning`; a reply without reasoning is still kept.
  assert.equal(run(Buffer.from(event({ reasoning: "hm" }) + event({ content: "Hi" })), false, 64).observer.content, "");
  assert.equal(run(Buffer.from(event({ content: "Hi" })), false, 64).observer.content, "Hi");
  const body = (message: Record<string, unknown>) => JSON.stringify({ choices: [{ index: 0, message }] });
  assert.equal(readCompletionBody(body({ role: "assistant", reasoning_content: "think", content: "Hello" })).content, "");
  assert.equal(readCompletionBody(body({ role: "assistant", content: "Hello" })).content, "Hello");
});
