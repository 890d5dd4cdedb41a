// Issue 13, item 5: the LB refuses what it should not forward, in OpenAI's error format, and never
// sends a request to a second replica after the first answered it with a body-caused 5xx.
//   - invalid shapes (n out of range, max_tokens: -5, an unknown role, stream: "yes") → 400, and the
//     engine never sees them; n: 2 is valid OpenAI (vLLM and SGLang sample n choices) and goes through;
//   - arrays nested 100k deep → 400 nesting_too_deep, in a known field or an unknown one;
//   - a 7.5 MB prompt (under the 8 MiB body cap) → 400 context_length_exceeded (the per-LB
//     prompt-token limit), before any replica is busy with it;
//   - a 500 goes back to the client from the one replica that answered it; a 503 moves on.
import { strict as assert } from "node:assert";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { pino } from "pino";
import { request } from "undici";
import { startProxy, type RunningProxy } from "../../src/index";
import { chatBody, faultsConfig, lbState, MODEL, TOKEN, waitFor } from "./harness";

/** An SGLang stand-in that counts the completions it is sent and answers them with `answer`. */
interface CountingEngine {
  id: string;
  url: string;
  server: Server;
  bodies: string[];
  answer: (res: ServerResponse) => void;
}

const OK_COMPLETION = JSON.stringify({
  id: "c",
  object: "chat.completion",
  created: 0,
  model: MODEL,
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 },
});
const answerOk = (res: ServerResponse): void => void res.writeHead(200, { "content-type": "application/json" }).end(OK_COMPLETION);

async function startCountingEngine(id: string): Promise<CountingEngine> {
  const engine: CountingEngine = { id, url: "", server: createServer(), bodies: [], answer: answerOk };
  engine.server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    if (req.url === "/health") return void res.end("{}");
    if (req.url === "/metrics") return void res.end("sglang:num_running_reqs 0\nsglang:num_queue_reqs 0\n");
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => {
      engine.bodies.push(Buffer.concat(parts).toString("utf8"));
      engine.answer(res);
    });
  });
  await new Promise<void>((resolve) => engine.server.listen(0, "127.0.0.1", resolve));
  engine.url = `http://127.0.0.1:${(engine.server.address() as AddressInfo).port}`;
  return engine;
}

let engines: CountingEngine[];
let lb: RunningProxy;
const seen = (): number => engines.reduce((total, e) => total + e.bodies.length, 0);

before(async () => {
  engines = [await startCountingEngine("r-1"), await startCountingEngine("r-2")];
  lb = await startProxy({
    config: faultsConfig("lb-shapes", engines, { policy: "round-robin" }),
    token: TOKEN,
    logger: pino({ level: "silent" }),
    seed: 7,
    settings: { port: 0, host: "127.0.0.1" },
  });
  await waitFor("both replicas healthy", async () => (await lbState(lb.url)).replicas.every((r) => r.healthy), 10_000);
});

after(async () => {
  await lb?.close();
  for (const engine of engines ?? []) {
    engine.server.closeAllConnections();
    await new Promise((resolve) => engine.server.close(resolve));
  }
});

async function post(
  body: string | Record<string, unknown>,
  path = "/v1/chat/completions",
): Promise<{ status: number; json: { error?: Record<string, unknown> } }> {
  const response = await request(`${lb.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: response.statusCode, json: JSON.parse(await response.body.text()) as { error?: Record<string, unknown> } };
}

test("invalid shapes get a 400 in OpenAI's format and never reach an engine", async () => {
  const cases: [Record<string, unknown>, string, string][] = [
    [chatBody("x", { max_tokens: -5 }), "max_tokens", "integer_below_min_value"],
    [chatBody("x", { max_tokens: 2.5 }), "max_tokens", "invalid_type"],
    [chatBody("x", { n: 0 }), "n", "integer_below_min_value"],
    [chatBody("x", { n: 129 }), "n", "integer_above_max_value"],
    [chatBody("x", { n: "2" }), "n", "invalid_type"],
    [chatBody("x", { stream: "yes" }), "stream", "invalid_type"],
    [chatBody("x", { temperature: 7 }), "temperature", "decimal_above_max_value"],
    [{ model: MODEL, messages: [{ role: "wizard", content: "hi" }] }, "messages[0].role", "invalid_value"],
    [{ model: MODEL, messages: [{ role: "user" }] }, "messages[0].content", "missing_required_parameter"],
    [{ model: MODEL, messages: [{ role: "user", content: [{ type: "text", text: 5 }] }] }, "messages[0].content[0].text", "invalid_type"],
    [{ model: MODEL, messages: [] }, "messages", "empty_array"],
    [{ model: MODEL, messages: "hello" }, "messages", "invalid_type"],
    [chatBody("x", { stream_options: { include_usage: "yes" } }), "stream_options.include_usage", "invalid_type"],
  ];
  const before = seen();
  for (const [body, param, code] of cases) {
    const { status, json } = await post(body);
    assert.equal(status, 400, JSON.stringify(body));
    assert.equal(json.error?.["param"], param);
    assert.equal(json.error?.["code"], code);
    assert.equal(json.error?.["type"], "invalid_request_error");
    assert.equal(typeof json.error?.["message"], "string");
  }
  assert.equal(seen(), before, "an invalid request reached an engine");
});

test("the openai SDK raises the LB's 400 as a BadRequestError naming the parameter", async () => {
  const client = new OpenAI({ baseURL: `${lb.url}/v1`, apiKey: "unused", maxRetries: 0 });
  await assert.rejects(
    client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: -5 }),
    (error: unknown) => error instanceof OpenAI.BadRequestError && error.param === "max_tokens" && /integer below minimum value/.test(error.message),
  );
});

test("n: 2 is valid OpenAI and goes through to the replica", async () => {
  const before = seen();
  const { status } = await post(chatBody("two choices", { n: 2 }));
  assert.equal(status, 200);
  assert.equal(seen(), before + 1);
});

test("arrays nested 100k deep are refused without crashing the LB or reaching an engine", async () => {
  const deep = (depth: number): string => "[".repeat(depth) + "]".repeat(depth);
  const before = seen();
  const bodies = [
    // In a content part, where the crash was.
    `{"model":"${MODEL}","messages":[{"role":"user","content":[{"type":"text","text":"x","extra":${deep(100_000)}}]}]}`,
    // In a field the LB does not know, which it otherwise passes through.
    `{"model":"${MODEL}","messages":[{"role":"user","content":"hi"}],"whatever":${deep(100_000)}}`,
    // Large enough to be refused before it is parsed.
    `{"model":"${MODEL}","messages":[{"role":"user","content":"hi"}],"whatever":${deep(2_000_000)}}`,
  ];
  for (const body of bodies) {
    const { status, json } = await post(body);
    assert.equal(status, 400);
    assert.equal(json.error?.["code"], "nesting_too_deep");
  }
  assert.equal(seen(), before);
  assert.equal((await post(chatBody("still serving"))).status, 200);
});

test("a 7.5 MB prompt under the 8 MiB body cap is refused by the prompt-token limit", async () => {
  const before = seen();
  const { status, json } = await post(chatBody("x".repeat(7_500_000)));
  assert.equal(status, 400);
  assert.equal(json.error?.["code"], "context_length_exceeded");
  assert.equal(json.error?.["param"], "messages");
  assert.equal(seen(), before);
});

test("a 500 is the replica's answer to the body: the client gets it and no second replica sees it", async () => {
  const crash = (res: ServerResponse): void =>
    void res.writeHead(500, { "content-type": "application/json" }).end('{"error":{"message":"handler crashed","type":"server_error","code":null}}');
  for (const engine of engines) engine.answer = crash;
  try {
    const before = seen();
    const { status, json } = await post(chatBody("poison"));
    assert.equal(status, 500);
    assert.equal(json.error?.["message"], "handler crashed");
    assert.equal(seen(), before + 1, "the request reached a second replica after a 500");
    // The replica stays in rotation: a 500 is an answer, not a dead engine.
    assert.ok((await lbState(lb.url)).replicas.every((r) => r.healthy));
    // A 503 (overloaded) is worth another replica: both see it.
    const overloaded = (res: ServerResponse): void =>
      void res.writeHead(503, { "content-type": "application/json" }).end('{"error":{"message":"busy","type":"server_error","code":null}}');
    for (const engine of engines) engine.answer = overloaded;
    const moved = seen();
    assert.equal((await post(chatBody("busy"))).status, 503);
    assert.equal(seen(), moved + 2);
  } finally {
    for (const engine of engines) engine.answer = answerOk;
  }
});
