import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { readCompletionBody, SseObserver } from "./sse";

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
  assert.deepEqual(readCompletionBody("not json"), { content: "", usage: null });
});
