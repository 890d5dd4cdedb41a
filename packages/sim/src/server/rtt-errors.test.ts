// A far client's refused requests take the whole emulated RTT, as everything else does: the inbound
// half is slept before any answer, errors included (400s and 413s came back after half the RTT).
// Only lower bounds on single samples, which the server's own sleeps guarantee; no ceilings.
import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { startEngineServer, type EngineServer } from "./index";

const FAR_RTT_MS = 300;
/** The server sleeps two halves of the RTT; a timer may fire up to a millisecond early each time. */
const TIMER_SLACK_MS = 2;
const FAR = { "x-meridian-src-region": "ap-seoul" };

let server: EngineServer;
before(async () => {
  server = await startEngineServer({ id: "us-1", region: "us-ashburn", rttMatrix: { "ap-seoul": { "us-ashburn": FAR_RTT_MS } } });
});
after(() => server.close());

async function timed(path: string, init: RequestInit): Promise<{ status: number; ms: number; code: unknown }> {
  const start = performance.now();
  const res = await fetch(`${server.url}${path}`, init);
  const body = (await res.json()) as { error?: { code?: unknown } };
  return { status: res.status, ms: performance.now() - start, code: body.error?.code };
}

function post(body: string, headers: Record<string, string> = {}): RequestInit {
  return { method: "POST", headers: { "content-type": "application/json", ...FAR, ...headers }, body };
}

it("answers a far client's 400s, 413 and 404 after the full emulated RTT, like /health", async () => {
  const chat = (body: unknown): string => JSON.stringify(body);
  const cases: [string, string, RequestInit, number][] = [
    ["health", "/health", { headers: FAR }, 200],
    ["bad JSON", "/v1/chat/completions", post("{not json"), 400],
    ["empty messages", "/v1/chat/completions", post(chat({ messages: [] })), 400],
    ["text part without text", "/v1/chat/completions", post(chat({ messages: [{ role: "user", content: [{ type: "text" }] }] })), 400],
    ["bad output-tokens header", "/v1/chat/completions", post(chat({ messages: [{ role: "user", content: "x" }] }), { "x-meridian-output-tokens": "-3" }), 400],
    ["over the context", "/v1/completions", post(chat({ prompt: "word ".repeat(220_000) })), 400],
    ["bad embeddings input", "/v1/embeddings", post(chat({ input: 42 })), 400],
    ["over 16 MB", "/v1/chat/completions", post(chat({ messages: [{ role: "user", content: "x".repeat(17 * 1024 * 1024) }] })), 413],
    ["unknown path", "/v2/nothing", { headers: FAR }, 404],
  ];
  for (const [name, path, init, status] of cases) {
    const answer = await timed(path, init);
    assert.equal(answer.status, status, `${name}: ${String(answer.code)}`);
    assert.ok(answer.ms >= FAR_RTT_MS - TIMER_SLACK_MS, `${name} (${status}) came back after ${answer.ms.toFixed(0)} ms; the RTT is ${FAR_RTT_MS}`);
  }
});
