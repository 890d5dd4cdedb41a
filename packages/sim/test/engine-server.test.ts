// Integration tests of the simulated engine HTTP server over loopback: OpenAI wire format (compared
// with recorded OpenAI fixtures), prefix caching through usage.cached_tokens, metrics families of both
// dialects against real SGLang/vLLM scrapes, RTT emulation, bad input, and the official openai client.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { emulatedRttMs, startEngineServer, type EngineServer } from "../src/server";

const repoRoot = join(fileURLToPath(import.meta.url), "..", "..", "..", "..");
/** Real engine/API outputs: the repo copy first, then the shared originals. */
function fixture(name: string): string {
  for (const dir of [join(repoRoot, "packages", "proxy", "test", "fixtures"), "/work/shared/fixtures"]) {
    const path = join(dir, name);
    if (existsSync(path)) return readFileSync(path, "utf8");
  }
  throw new Error(`fixture ${name} not found`);
}

const SYSTEM_PROMPT =
  "You are Meridian's test assistant. Answer briefly and precisely. This system prompt is long on purpose " +
  "so that it covers several 64-character blocks of the chat block keys, which lets the engine serve " +
  "the shared prefix of later turns from its prefix cache instead of prefilling it again.";

interface ChatResponse {
  id: string;
  object: string;
  choices: { index: number; message: { role: string; content: string }; finish_reason: string }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details: { cached_tokens: number } };
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function chat(server: EngineServer, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<ChatResponse> {
  const res = await post(`${server.url}/v1/chat/completions`, body, headers);
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as ChatResponse;
}

/** Splits an SSE body into its `data:` payloads, checking the framing on the way. */
function sseEvents(text: string): string[] {
  assert.ok(text.endsWith("\n\n"), "events end with a blank line");
  return text
    .slice(0, -2)
    .split("\n\n")
    .map((event) => {
      assert.match(event, /^data: /, `event framing: ${event.slice(0, 40)}`);
      return event.slice("data: ".length);
    });
}

/** Metric families of an exposition: name → { type, label names of each sample }. */
function families(text: string): Map<string, { type: string; labelSets: Set<string> }> {
  const result = new Map<string, { type: string; labelSets: Set<string> }>();
  for (const line of text.split("\n")) {
    const typeLine = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (typeLine) {
      result.set(typeLine[1]!, { type: typeLine[2]!, labelSets: new Set() });
      continue;
    }
    if (line === "" || line.startsWith("#")) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(sample, `sample line: ${line}`);
    const name = sample[1]!;
    const family = [...result.keys()].find((f) => name === f || (/^_(sum|count|bucket)$/.test(name.slice(f.length)) && name.startsWith(f)));
    assert.ok(family, `sample ${name} has a TYPE line`);
    assert.ok(!Number.isNaN(Number(sample[3]!.replace("+Inf", "Infinity"))), `value of ${line}`);
    const labelNames = [...(sample[2] ?? "").matchAll(/([a-zA-Z_]\w*)="/g)].map((m) => m[1]).join(",");
    result.get(family)!.labelSets.add(`${name.slice(family.length)}|${labelNames}`);
  }
  return result;
}

describe("simulated engine server", () => {
  let sglang: EngineServer;
  let vllm: EngineServer;

  before(async () => {
    sglang = await startEngineServer({
      id: "us-1",
      region: "us-ashburn",
      dialect: "sglang",
      rttMatrix: { "ap-seoul": { "us-ashburn": 300 } },
    });
    vllm = await startEngineServer({ id: "eu-1", region: "eu-frankfurt", dialect: "vllm", model: "meridian-sim-vllm" });
  });

  after(async () => {
    await Promise.all([sglang.close(), vllm.close()]);
  });

  it("streams chat completions with OpenAI's SSE framing, usage chunk and [DONE]", async () => {
    const res = await post(`${sglang.url}/v1/chat/completions`, {
      model: "meridian-sim-8b",
      messages: [{ role: "user", content: "Stream me a few words." }],
      max_tokens: 6,
      stream: true,
      stream_options: { include_usage: true },
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
    const events = sseEvents(await res.text());
    assert.equal(events.at(-1), "[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Record<string, unknown> & { choices: Record<string, unknown>[] });
    // role chunk, 6 content chunks, finish chunk, usage chunk
    assert.equal(chunks.length, 9);

    const reference = sseEvents(fixture("sse-openai-gpt5nano-include-usage.txt"))
      .slice(0, -1)
      .map((e) => JSON.parse(e) as Record<string, unknown>);
    const referenceKeys = new Set(reference.flatMap((chunk) => Object.keys(chunk)));
    for (const chunk of chunks) {
      for (const key of Object.keys(chunk)) assert.ok(referenceKeys.has(key), `chunk key ${key} appears in OpenAI's chunks`);
      assert.equal(chunk.object, "chat.completion.chunk");
      assert.equal(chunk.id, chunks[0]!.id);
      assert.equal(chunk.model, "meridian-sim-8b");
    }
    assert.deepEqual(chunks[0]!.choices[0]!.delta, { role: "assistant", content: "" });
    const text = chunks
      .slice(1, 7)
      .map((c) => (c.choices[0]!.delta as { content: string }).content)
      .join("");
    assert.equal(text.split(" ").length, 6);
    assert.equal(chunks[7]!.choices[0]!.finish_reason, "length");
    assert.deepEqual(chunks[7]!.choices[0]!.delta, {});
    const usageChunk = chunks[8]!;
    assert.deepEqual(usageChunk.choices, []);
    const usage = usageChunk.usage as ChatResponse["usage"];
    assert.equal(usage.completion_tokens, 6);
    assert.equal(usage.total_tokens, usage.prompt_tokens + 6);
    assert.equal(typeof usage.prompt_tokens_details.cached_tokens, "number");
  });

  it("omits the usage chunk and usage fields unless include_usage is set", async () => {
    const res = await post(`${sglang.url}/v1/chat/completions`, {
      messages: [{ role: "user", content: "No usage please." }],
      max_tokens: 2,
      stream: true,
    });
    const events = sseEvents(await res.text());
    assert.equal(events.length, 5); // role, 2 contents, finish, [DONE]
    for (const event of events.slice(0, -1)) assert.ok(!("usage" in JSON.parse(event)));
  });

  it("answers non-streaming chat completions in OpenAI's shape", async () => {
    const body = await chat(sglang, { messages: [{ role: "user", content: "Hello!" }], max_completion_tokens: 4 });
    const reference = JSON.parse(fixture("completion-openai-gpt5nano-recorded.json")) as Record<string, unknown> & {
      choices: Record<string, unknown>[];
    };
    for (const key of Object.keys(body)) assert.ok(key in reference, `response key ${key}`);
    for (const key of Object.keys(body.choices[0]!)) assert.ok(key in reference.choices[0]! || key === "logprobs", `choice key ${key}`);
    assert.equal(body.object, "chat.completion");
    assert.match(body.id, /^chatcmpl-/);
    assert.equal(body.choices[0]!.message.role, "assistant");
    assert.equal(body.choices[0]!.finish_reason, "length");
    assert.equal(body.usage.completion_tokens, 4);
    assert.equal(body.choices[0]!.message.content.split(" ").length, 4);
  });

  it("stops at the engine's own output cap with finish_reason stop, and honours the output-length header", async () => {
    const forced = await chat(sglang, { messages: [{ role: "user", content: "Short." }], max_tokens: 50 }, { "x-meridian-output-tokens": "3" });
    assert.equal(forced.usage.completion_tokens, 3);
    assert.equal(forced.choices[0]!.finish_reason, "stop");
  });

  it("reports growing cached_tokens on a repeated prefix, and the next turn hits the cached reply", async () => {
    const system = { role: "system", content: SYSTEM_PROMPT };
    const turn1 = [system, { role: "user", content: "First question about caching in the engine?" }];
    const first = await chat(sglang, { messages: turn1, max_tokens: 24 });
    const repeat = await chat(sglang, { messages: turn1, max_tokens: 24 });
    assert.ok(repeat.usage.prompt_tokens_details.cached_tokens > first.usage.prompt_tokens_details.cached_tokens);
    assert.ok(repeat.usage.prompt_tokens_details.cached_tokens >= repeat.usage.prompt_tokens - 16, "all full blocks hit");
    assert.equal(repeat.choices[0]!.message.content, first.choices[0]!.message.content, "replies are deterministic");

    const turn2 = [...turn1, { role: "assistant", content: first.choices[0]!.message.content }, { role: "user", content: "And a follow-up?" }];
    const second = await chat(sglang, { messages: turn2, max_tokens: 4 });
    assert.ok(
      second.usage.prompt_tokens_details.cached_tokens > repeat.usage.prompt_tokens_details.cached_tokens,
      `turn 2 reuses turn 1 and its reply: ${second.usage.prompt_tokens_details.cached_tokens} cached`,
    );
  });

  it("/flush_cache resets the cached tokens", async () => {
    const messages = [
      { role: "system", content: `${SYSTEM_PROMPT} (flush test)` },
      { role: "user", content: "flush?" },
    ];
    await chat(sglang, { messages, max_tokens: 2 });
    const warm = await chat(sglang, { messages, max_tokens: 2 });
    assert.ok(warm.usage.prompt_tokens_details.cached_tokens > 0);
    const flush = await fetch(`${sglang.url}/flush_cache`, { method: "POST" });
    assert.equal(flush.status, 200);
    await flush.text();
    const cold = await chat(sglang, { messages, max_tokens: 2 });
    assert.equal(cold.usage.prompt_tokens_details.cached_tokens, 0);
  });

  it("serves /v1/completions, streamed and not", async () => {
    const prompt = "Once upon a time, in a region far away, ".repeat(4);
    const res = await post(`${vllm.url}/v1/completions`, { prompt, max_tokens: 5 });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { object: string; model: string; choices: { text: string; finish_reason: string }[]; usage: ChatResponse["usage"] };
    assert.equal(body.object, "text_completion");
    assert.equal(body.model, "meridian-sim-vllm");
    assert.equal(body.choices[0]!.text.split(" ").length, 5);
    assert.equal(body.usage.prompt_tokens, Math.ceil(prompt.length / 4));

    const streamed = await post(`${vllm.url}/v1/completions`, { prompt, max_tokens: 5, stream: true, stream_options: { include_usage: true } });
    const events = sseEvents(await streamed.text());
    assert.equal(events.at(-1), "[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as { object: string; choices: { text: string }[]; usage?: ChatResponse["usage"] | null });
    assert.ok(chunks.every((c) => c.object === "text_completion"));
    assert.equal(chunks.map((c) => c.choices[0]?.text ?? "").join(""), body.choices[0]!.text);
    assert.ok(chunks.at(-1)!.usage!.prompt_tokens_details.cached_tokens > 0, "the repeated prompt hits the cache");

    // Like SGLang and vLLM, /v1/completions defaults max_tokens to 16.
    const defaulted = (await (await post(`${vllm.url}/v1/completions`, { prompt: "default length" })).json()) as typeof body;
    assert.equal(defaulted.usage.completion_tokens, 16);
    assert.equal(defaulted.choices[0]!.finish_reason, "length");
  });

  it("lists its model and answers /health", async () => {
    const models = (await (await fetch(`${vllm.url}/v1/models`)).json()) as { object: string; data: { id: string }[] };
    assert.equal(models.object, "list");
    assert.deepEqual(
      models.data.map((m) => m.id),
      ["meridian-sim-vllm"],
    );
    const health = await fetch(`${sglang.url}/health`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: "ok" });
  });

  for (const dialect of ["sglang", "vllm"] as const) {
    it(`exposes the ${dialect} metric families, types and labels of a real ${dialect} scrape`, async () => {
      const server = dialect === "sglang" ? sglang : vllm;
      await chat(server, { messages: [{ role: "user", content: "metrics please" }], max_tokens: 3 });
      const res = await fetch(`${server.url}/metrics`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
      const ours = families(await res.text());
      const real = families(fixture(dialect === "sglang" ? "sglang-metrics-docs-example.txt" : "vllm-metrics-v0.7-aibrix-docs.txt"));
      for (const [name, family] of real) {
        const mine = ours.get(name);
        assert.ok(mine, `family ${name} is exposed`);
        assert.equal(mine.type, family.type, `TYPE of ${name}`);
        // The vLLM fixture is cut mid-histogram, so compare the sample kinds it does contain.
        for (const labelSet of family.labelSets) assert.ok(mine.labelSets.has(labelSet), `${name}: sample ${labelSet}`);
      }
      const prefix = `${dialect}:`;
      for (const name of ours.keys()) assert.ok(name.startsWith(prefix) || (dialect === "vllm" && name === "process_start_time_seconds"), name);
      // The docs-example release's families plus the KV capacity current releases export.
      if (dialect === "sglang") assert.deepEqual([...ours.keys()].sort(), [...real.keys(), "sglang:max_total_num_tokens"].sort(), "SGLang's families");
      else for (const name of ["vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds"]) assert.equal(ours.get(name)?.type, "histogram");
    });
  }

  it("reports load in the metrics while requests run", async () => {
    const running = post(`${sglang.url}/v1/chat/completions`, { messages: [{ role: "user", content: "long answer" }], max_tokens: 60 });
    for (let i = 0; i < 200 && sglang.engine.load().running === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    const text = await (await fetch(`${sglang.url}/metrics`)).text();
    assert.match(text, /^sglang:num_running_reqs\{model_name="meridian-sim-8b"\} 1\.0$/m);
    assert.match(text, /^sglang:num_queue_reqs\{model_name="meridian-sim-8b"\} 0\.0$/m);
    const used = /^sglang:num_used_tokens\{[^}]*\} (\S+)$/m.exec(text);
    assert.ok(used && Number(used[1]) > 0);
    await (await running).text();
  });

  // Timing assertions here never put a wall-clock ceiling on one sample (a loaded machine can stall
  // any request): a far request must take at least the emulated RTT, which the server's own sleeps
  // guarantee, and the median of several far samples must exceed the median of several near ones.
  const SAMPLES = 3;
  const FAR_RTT_MS = 300;
  /** The server sleeps two halves of the RTT; a timer may fire up to a millisecond early each time. */
  const TIMER_SLACK_MS = 2;
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  async function interleaved(kinds: Record<string, () => Promise<number>>): Promise<Record<string, number[]>> {
    const out: Record<string, number[]> = Object.fromEntries(Object.keys(kinds).map((k) => [k, []]));
    for (let i = 0; i < SAMPLES; i++) for (const [kind, measure] of Object.entries(kinds)) out[kind]!.push(await measure());
    return out;
  }

  it("delays requests from a far region by the emulated RTT, and nothing else", async () => {
    const timed = (headers: Record<string, string>) => async (): Promise<number> => {
      const start = performance.now();
      await chat(sglang, { messages: [{ role: "user", content: "rtt probe" }], max_tokens: 1 }, headers);
      return performance.now() - start;
    };
    const chats = await interleaved({
      local: timed({}),
      far: timed({ "x-meridian-src-region": "ap-seoul" }),
      unknown: timed({ "x-meridian-src-region": "nowhere" }),
    });
    for (const far of chats.far!) assert.ok(far >= FAR_RTT_MS - TIMER_SLACK_MS, `far request took ${far.toFixed(0)} ms`);
    assert.ok(median(chats.far!) > median(chats.local!), JSON.stringify(chats));
    assert.ok(median(chats.far!) > median(chats.unknown!), JSON.stringify(chats));

    const probe = (headers: Record<string, string>) => async (): Promise<number> => {
      const start = performance.now();
      const res = await fetch(`${sglang.url}/health`, { headers });
      await res.text();
      return performance.now() - start;
    };
    const probes = await interleaved({ local: probe({}), far: probe({ "x-meridian-src-region": "ap-seoul" }) });
    for (const far of probes.far!) assert.ok(far >= FAR_RTT_MS - TIMER_SLACK_MS, `far health probe took ${far.toFixed(0)} ms`);
    assert.ok(median(probes.far!) > median(probes.local!), JSON.stringify(probes));
  });

  it("emulates RTT from the matrix in either direction, and none for a region it does not list", () => {
    const matrix = { "ap-seoul": { "us-ashburn": FAR_RTT_MS } };
    assert.equal(emulatedRttMs(matrix, "ap-seoul", "us-ashburn"), FAR_RTT_MS);
    assert.equal(emulatedRttMs(matrix, "us-ashburn", "ap-seoul"), FAR_RTT_MS);
    assert.equal(emulatedRttMs(matrix, "nowhere", "us-ashburn"), 0);
    assert.equal(emulatedRttMs(matrix, undefined, "us-ashburn"), 0);
    assert.equal(emulatedRttMs(undefined, "ap-seoul", "us-ashburn"), 0);
  });

  it("delays the first streamed token by the emulated RTT too", async () => {
    const firstToken = (headers: Record<string, string>) => async (): Promise<number> => {
      const start = performance.now();
      const res = await post(`${sglang.url}/v1/chat/completions`, { messages: [{ role: "user", content: "ttft" }], max_tokens: 2, stream: true }, headers);
      const reader = res.body!.getReader();
      let seen = "";
      while (!seen.includes('"content":"') || seen.indexOf('"content":""') === seen.lastIndexOf('"content":"')) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += new TextDecoder().decode(value);
      }
      const elapsed = performance.now() - start;
      await reader.cancel();
      return elapsed;
    };
    const ttft = await interleaved({ local: firstToken({}), far: firstToken({ "x-meridian-src-region": "ap-seoul" }) });
    for (const far of ttft.far!) assert.ok(far >= FAR_RTT_MS - TIMER_SLACK_MS, `far first token after ${far.toFixed(0)} ms`);
    assert.ok(median(ttft.far!) > median(ttft.local!), JSON.stringify(ttft));
  });

  it("answers bad input with OpenAI error JSON and keeps serving", async () => {
    const url = `${sglang.url}/v1/chat/completions`;
    const cases: { body: string; status: number; code: string | null; param: string | null }[] = [
      { body: "{not json", status: 400, code: null, param: null },
      { body: "[]", status: 400, code: "invalid_type", param: null },
      { body: "{}", status: 400, code: "missing_required_parameter", param: "messages" },
      { body: JSON.stringify({ messages: [] }), status: 400, code: "empty_array", param: "messages" },
      { body: JSON.stringify({ messages: "hi" }), status: 400, code: "invalid_type", param: "messages" },
      { body: JSON.stringify({ messages: [{ role: "user", content: 5 }] }), status: 400, code: "invalid_type", param: "messages[0].content" },
      { body: JSON.stringify({ messages: [{ role: "robot", content: "x" }] }), status: 400, code: "invalid_value", param: "messages[0].role" },
      {
        body: JSON.stringify({ messages: [{ role: "user", content: "x" }], max_tokens: 0 }),
        status: 400,
        code: "integer_below_min_value",
        param: "max_tokens",
      },
      { body: JSON.stringify({ messages: [{ role: "user", content: "x" }], max_tokens: "ten" }), status: 400, code: "invalid_type", param: "max_tokens" },
      { body: JSON.stringify({ messages: [{ role: "user", content: "x" }], stream: "yes" }), status: 400, code: "invalid_type", param: "stream" },
    ];
    const reference = JSON.parse(fixture("error-openai-model-not-found.json")) as { error: Record<string, unknown> };
    const responses = await Promise.all(cases.map((c) => post(url, c.body)));
    for (const [i, res] of responses.entries()) {
      const expected = cases[i]!;
      assert.equal(res.status, expected.status, expected.body);
      const body = (await res.json()) as { error: Record<string, unknown> };
      assert.deepEqual(Object.keys(body.error).sort(), Object.keys(reference.error).sort());
      assert.equal(body.error.type, "invalid_request_error");
      assert.equal(body.error.code, expected.code, expected.body);
      assert.equal(body.error.param, expected.param, expected.body);
      assert.equal(typeof body.error.message, "string");
    }
    // A content part without its text: a 400, not a reset connection (the handler took every
    // non-OpenAI error for a client gone mid-upload).
    const badPart = await post(url, { messages: [{ role: "user", content: [{ type: "text" }] }] });
    assert.equal(badPart.status, 400);
    await badPart.text();
    // Longer than the model's context (max_model_len, /v1/models): refused as vLLM and SGLang do.
    const tooLong = await post(url, { messages: [{ role: "user", content: "word ".repeat(220_000) }] });
    assert.equal(tooLong.status, 400);
    assert.equal(((await tooLong.json()) as { error: { code: string } }).error.code, "context_length_exceeded");
    const badCompletion = await post(`${sglang.url}/v1/completions`, { prompt: 42 });
    assert.equal(badCompletion.status, 400);
    await badCompletion.text();
    const badHeader = await post(url, { messages: [{ role: "user", content: "x" }] }, { "x-meridian-output-tokens": "-3" });
    assert.equal(badHeader.status, 400);
    await badHeader.text();
    for (const [method, path] of [
      ["GET", "/v2/nothing"],
      ["POST", "/health"],
      ["GET", "/v1/chat/completions"],
    ] as const) {
      const res = await fetch(`${sglang.url}${path}`, { method });
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.equal(((await res.json()) as { error: { type: string } }).error.type, "invalid_request_error");
    }
    // A truncated request body (client gave up mid-upload) must not take the server down either.
    const { request } = await import("node:http");
    await new Promise<void>((resolve) => {
      const req = request(url, { method: "POST", headers: { "content-length": "1000" } });
      req.on("error", () => resolve());
      // Hang up once the partial body has left for the server.
      req.write('{"messages":', () => {
        req.destroy();
        resolve();
      });
    });
    const good = await chat(sglang, { messages: [{ role: "user", content: "still alive?" }], max_tokens: 2 });
    assert.equal(good.usage.completion_tokens, 2);
  });

  it("answers a body over the 16 MB limit with a 413 and OpenAI error JSON the client can read, and keeps serving", async () => {
    const big = JSON.stringify({ messages: [{ role: "user", content: "x".repeat(17 * 1024 * 1024) }] });
    for (const path of ["/v1/chat/completions", "/v1/embeddings"]) {
      const res = await post(`${sglang.url}${path}`, big);
      assert.equal(res.status, 413, path);
      assert.equal(res.headers.get("connection"), "close", path);
      const body = (await res.json()) as { error: { type: string; code: string; message: string } };
      assert.equal(body.error.type, "invalid_request_error", path);
      assert.equal(body.error.code, "request_too_large", path);
      assert.match(body.error.message, /too large/, path);
    }
    const good = await chat(sglang, { messages: [{ role: "user", content: "still alive?" }], max_tokens: 2 });
    assert.equal(good.usage.completion_tokens, 2);
  });

  it("cancels the engine request when the client disconnects mid-stream", async () => {
    const controller = new AbortController();
    const res = await fetch(`${vllm.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "a long story" }], max_tokens: 200, stream: true }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    assert.equal(vllm.engine.load().running, 1);
    controller.abort();
    await reader.read().catch(() => undefined);
    for (let i = 0; i < 100 && vllm.engine.load().running > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(vllm.engine.load().running, 0);
    assert.ok(vllm.engine.load().requestsCancelled >= 1);
  });

  it("works with the official openai client", async () => {
    const client = new OpenAI({ baseURL: `${sglang.url}/v1`, apiKey: "not-needed", maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: "meridian-sim-8b",
      messages: [{ role: "user", content: "Hello from the openai client" }],
      max_tokens: 5,
    });
    assert.equal(completion.choices[0]!.message.content!.split(" ").length, 5);
    assert.equal(completion.usage!.completion_tokens, 5);

    const stream = await client.chat.completions.create({
      model: "meridian-sim-8b",
      messages: [{ role: "user", content: "Hello from the openai client" }],
      max_tokens: 5,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let cached = -1;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.usage) cached = chunk.usage.prompt_tokens_details?.cached_tokens ?? -1;
    }
    assert.equal(text, completion.choices[0]!.message.content);
    assert.ok(cached >= 0);

    const text2 = await client.completions.create({ model: "meridian-sim-8b", prompt: "Complete this", max_tokens: 3 });
    assert.equal(text2.usage!.completion_tokens, 3);

    await assert.rejects(
      client.chat.completions.create({ model: "meridian-sim-8b", messages: [], max_tokens: 5 }),
      (error: unknown) => error instanceof OpenAI.BadRequestError && error.code === "empty_array",
    );
  });
});
