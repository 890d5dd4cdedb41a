import assert from "node:assert/strict";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { getEventListeners } from "node:events";
import { after, before, describe, it } from "node:test";
import { errorKind, type ReplayRecord } from "./stats";
import { streamChat, type ChatStreamRequest, type ChatStreamResult } from "./stream-chat";

// Each path answers one way an upstream can reply with 200: the shapes vLLM, SGLang and OpenAI
// stream (content-type text/event-stream, events ending with `data: [DONE]`), and the ways a 200
// can fail to be such a stream.
const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}): string =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta }], ...extra })}\n\n`;
const usage = `data: ${JSON.stringify({ id: "c1", choices: [], usage: { prompt_tokens: 7, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 3 } } })}\n\n`;
const events = [chunk({ role: "assistant", content: "" }), chunk({ content: "Hel" }), chunk({ content: "lo" }), chunk({}, { finish_reason: "stop" }), usage];

const replies: Record<string, (res: ServerResponse) => void> = {
  // vLLM: `text/event-stream; charset=utf-8`, every event `data: ...\n\n`, then `data: [DONE]\n\n`.
  "/vllm": (res) => {
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
    for (const event of events) res.write(event);
    res.end("data: [DONE]\n\n");
  },
  // OpenAI style, with a keep-alive comment, CRLF line ends and no newline after [DONE].
  "/openai": (res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(": keep-alive\r\n\r\n");
    for (const event of events) res.write(event.replaceAll("\n", "\r\n"));
    res.end("data: [DONE]");
  },
  // A JSON error body with status 200 (a misbehaving gateway, or stream ignored upstream).
  "/json": (res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: "model overloaded" } }));
  },
  "/html": (res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<html>maintenance</html>");
  },
  "/silent": (res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end();
  },
  // Cut off mid-generation: content arrived but the stream never finished.
  "/cut": (res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const event of events.slice(0, 3)) res.write(event);
    res.end();
  },
  // Cut off by a reset after part of an event: what an engine or LB that dies (or fails after its
  // headers) does to a stream it had started.
  "/reset": (res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(events.slice(0, 3).join("") + events[3]!.slice(0, 20), () => res.destroy());
  },
  // vLLM reports a mid-stream failure as an error event, then still sends [DONE].
  "/error-event": (res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(events[1]);
    res.write(`data: ${JSON.stringify({ error: { message: "engine died", code: 500 } })}\n\n`);
    res.end("data: [DONE]\n\n");
  },
  // An upstream that accepts the request and then says nothing.
  "/hang": (res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(": accepted\n\n");
  },
};

let server: Server;
let base = "";
before(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => (replies[req.url ?? ""] ?? ((r: ServerResponse) => r.writeHead(404).end()))(res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const request = (path: string): ChatStreamRequest => ({
  url: `${base}${path}`,
  model: "m",
  messages: [{ role: "user", content: "hi" }],
  maxTokens: 4,
  headers: {},
  signal: new AbortController().signal,
  timeoutMs: 10_000,
});
const stream = (path: string): Promise<ChatStreamResult> => streamChat(request(path));

describe("streamChat", () => {
  it("counts vLLM- and OpenAI-shaped streams that end with [DONE] as ok", async () => {
    for (const path of ["/vllm", "/openai"]) {
      const r = await stream(path);
      assert.equal(r.ok, true, `${path}: ${r.error}`);
      assert.equal(r.error, undefined);
      assert.equal(r.status, 200);
      assert.equal(r.contentDeltas, 2, path);
      assert.equal(r.outputTokens, 2, path);
      assert.equal(r.cachedTokens, 3, path);
      assert.ok(r.ttftMs !== undefined && r.e2eMs !== undefined, path);
    }
  });

  it("fails a 200 that is not an event stream, naming the content-type and any error message", async () => {
    const json = await stream("/json");
    assert.equal(json.ok, false);
    assert.equal(json.status, 200);
    assert.equal(json.error, "stream: response was not an event stream (content-type application/json): model overloaded");
    assert.equal(json.ttftMs, undefined);
    const html = await stream("/html");
    assert.equal(html.ok, false);
    assert.equal(html.error, "stream: response was not an event stream (content-type text/html)");
  });

  it("fails an event stream that ends with no data, or is cut off before [DONE]", async () => {
    const silent = await stream("/silent");
    assert.equal(silent.ok, false);
    assert.equal(silent.error, "stream: ended without any data event");
    const cut = await stream("/cut");
    assert.equal(cut.ok, false);
    assert.equal(cut.error, "stream: ended without [DONE]");
    assert.equal(cut.contentDeltas, 2, "what did arrive is still reported");
  });

  it("counts a started stream that the upstream resets as cut off before [DONE] (a stream error), keeping what arrived", async () => {
    const reset = await stream("/reset");
    assert.equal(reset.status, 200);
    assert.equal(reset.ok, false);
    assert.match(reset.error ?? "", /^stream: ended without \[DONE\] \(.+\)$/, "the half event at the cut is no unparseable chunk");
    const record: ReplayRecord = {
      ...reset,
      index: 0,
      region: "r",
      sessionId: "s",
      scheduledMs: 0,
      scheduleLagMs: 0,
      queueWaitMs: 0,
      startMs: 0,
      inputTokens: 1,
      maxTokens: 4,
    };
    assert.equal(errorKind(record), "stream");
    assert.equal(reset.contentDeltas, 2, "what did arrive is still reported");
    assert.ok(reset.ttftMs !== undefined && reset.e2eMs !== undefined, "and its timings");
  });

  it("ends a request at its timeout, or when the caller's signal aborts, and says which", async () => {
    const timedOut = await streamChat({ ...request("/hang"), timeoutMs: 100 });
    assert.equal(timedOut.ok, false);
    assert.equal(timedOut.error, "timeout after 100 ms");
    const run = new AbortController();
    const aborted = streamChat({ ...request("/hang"), signal: run.signal });
    run.abort();
    assert.equal((await aborted).error, "aborted");
    const before = new AbortController();
    before.abort();
    assert.equal((await streamChat({ ...request("/vllm"), signal: before.signal })).error, "aborted");
  });

  it("leaves nothing behind on a long-lived caller signal, request after request", async () => {
    // An endless load generator passes its run's signal to every request; on Node 20 each
    // AbortSignal.any over it stayed in the signal's dependant set for good.
    const run = new AbortController();
    const n = 100;
    for (let i = 0; i < n; i++) assert.equal((await streamChat({ ...request("/vllm"), signal: run.signal })).ok, true);
    const dependants = Object.getOwnPropertySymbols(run.signal).find((x) => String(x) === "Symbol(kDependantSignals)");
    const kept = dependants ? ((run.signal as unknown as Record<symbol, { size: number } | undefined>)[dependants]?.size ?? 0) : 0;
    assert.ok(kept < n / 2, `${kept} dependant signals kept after ${n} finished requests`);
    assert.equal(getEventListeners(run.signal, "abort").length, 0);
  });

  it("an error event fails the request even though [DONE] follows", async () => {
    const r = await stream("/error-event");
    assert.equal(r.ok, false);
    assert.equal(r.error, "stream: engine died");
  });
});
