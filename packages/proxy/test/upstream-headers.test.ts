// What of the client's request headers reaches the engine (through a peer LB too), and what of the
// engine's answer reaches the client: its request id, and a body in a content coding.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { gunzipSync, gzipSync } from "node:zlib";
import type { RunningProxy } from "../src/index";
import { request } from "undici";
import { chatBody, lbConfig, post, startLb, startPeeredPair } from "./helpers";
import { startRecordingEngine } from "./recording-engine";

const REPLY = JSON.stringify({
  id: "chatcmpl-1",
  object: "chat.completion",
  choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
});
const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

let engine: Awaited<ReturnType<typeof startRecordingEngine>>;
let lb: RunningProxy;

before(async () => {
  engine = await startRecordingEngine((seen, res) => {
    const body = JSON.parse(seen.body) as { gzip_me?: "when-allowed" | "always"; stream?: boolean };
    // Like vLLM with --enable-request-id-headers: echo the request's X-Request-Id, else make one.
    res.setHeader("x-request-id", String(seen.headers["x-request-id"] ?? "engine-generated-uuid"));
    // A server (or a reverse proxy in front of the engine) may compress when the request states no
    // Accept-Encoding (RFC 9110 §12.5.3: "any content coding is considered acceptable"); a broken
    // one compresses whatever the request said.
    const gzip = body.gzip_me === "always" || (body.gzip_me === "when-allowed" && seen.headers["accept-encoding"] === undefined);
    if (body.stream) {
      res.writeHead(200, { "content-type": "text/event-stream", ...(gzip ? { "content-encoding": "gzip" } : {}) });
      const events = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "hi" } }] })}\n\ndata: [DONE]\n\n`;
      res.end(gzip ? gzipSync(events) : events);
      return;
    }
    res.setHeader("content-type", "application/json");
    if (gzip) res.setHeader("content-encoding", "gzip");
    res.end(gzip ? gzipSync(REPLY) : REPLY);
  });
  lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]));
});
after(async () => {
  await lb?.close();
  await engine?.close();
});

test("the client's x-request-id and trace context reach the engine, and the client gets its own id back", async () => {
  const tracestate = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";
  const result = await post(`${lb.url}/v1/chat/completions`, chatBody("hello"), { "x-request-id": "client-req-42", traceparent: TRACEPARENT, tracestate });
  assert.equal(result.status, 200, result.text);
  const seen = engine.seen.at(-1)?.headers;
  // Suffixed per attempt: vLLM refuses a second running request with one id (request-id-collision.test.ts).
  assert.match(String(seen?.["x-request-id"]), /^client-req-42-[\w-]{8}$/, "x-request-id did not reach the engine");
  assert.equal(seen?.["traceparent"], TRACEPARENT);
  assert.equal(seen?.["tracestate"], tracestate);
  assert.equal(result.headers["x-request-id"], "client-req-42");
});

test("an oversized or unsafe request id is left out; the request is still served", async () => {
  for (const id of ["x".repeat(257), "caf\u00e9-id"]) {
    const result = await post(`${lb.url}/v1/chat/completions`, chatBody("hello"), { "x-request-id": id, traceparent: TRACEPARENT });
    assert.equal(result.status, 200, result.text);
    const seen = engine.seen.at(-1)?.headers;
    assert.equal(seen?.["x-request-id"], undefined);
    assert.equal(seen?.["traceparent"], TRACEPARENT, "the other headers still pass");
    assert.equal(result.headers["x-request-id"], "engine-generated-uuid");
  }
});

test("the LB asks for an uncompressed answer, so a compressing server sends one the client can read", async () => {
  for (const stream of [false, true]) {
    const result = await post(`${lb.url}/v1/chat/completions`, chatBody("zip", { gzip_me: "when-allowed", stream }));
    assert.equal(result.status, 200);
    assert.equal(engine.seen.at(-1)?.headers["accept-encoding"], "identity");
    assert.equal(result.headers["content-encoding"], undefined);
    assert.ok(result.text.includes('"hi"'), result.text);
  }
});

/** The answer's head and raw bytes: undici's request() does not decode, a client decodes by the header. */
async function postRaw(body: unknown): Promise<{ status: number; encoding: unknown; bytes: Buffer }> {
  const response = await request(`${lb.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.statusCode, encoding: response.headers["content-encoding"], bytes: Buffer.from(await response.body.arrayBuffer()) };
}

test("an answer compressed anyway reaches the client untouched with its Content-Encoding", async () => {
  const plain = await postRaw(chatBody("zip", { gzip_me: "always" }));
  assert.equal(plain.status, 200);
  assert.equal(plain.encoding, "gzip");
  assert.equal(gunzipSync(plain.bytes).toString(), REPLY);
  const streamed = await postRaw(chatBody("zip", { gzip_me: "always", stream: true }));
  assert.equal(streamed.status, 200);
  assert.equal(streamed.encoding, "gzip");
  assert.match(gunzipSync(streamed.bytes).toString(), /"content":"hi"[\s\S]*data: \[DONE\]\n\n$/);
});

test("a request forwarded to a peer LB carries the client's request id and trace context to its engine", async () => {
  const euEngine = await startRecordingEngine((_seen, res) => {
    res.setHeader("content-type", "application/json");
    res.end(REPLY);
  });
  // lb-us2's one replica is draining: the request goes to the peer (via-peer).
  const usConfig = lbConfig("lb-us2", "us-ashburn", [engine], { crossRegion: "via-peer", policy: "skylb" });
  const draining = { ...usConfig, replicas: (usConfig.replicas ?? []).map((r) => ({ ...r, state: "draining" as const })) };
  const euConfig = lbConfig("lb-eu", "eu-frankfurt", [{ ...euEngine, region: "eu-frankfurt" }], { crossRegion: "via-peer", policy: "skylb" });
  const [lbUs, lbEu] = await startPeeredPair(draining, euConfig);
  try {
    const result = await post(`${lbUs.url}/v1/chat/completions`, chatBody("via peer"), { "x-request-id": "client-req-7", traceparent: TRACEPARENT });
    assert.equal(result.status, 200, result.text);
    assert.equal(result.headers["x-meridian-forwarded-to"], "lb-eu");
    assert.match(String(euEngine.seen.at(-1)?.headers["x-request-id"]), /^client-req-7-[\w-]{8}$/);
    assert.equal(result.headers["x-request-id"], "client-req-7");
    assert.equal(euEngine.seen.at(-1)?.headers["traceparent"], TRACEPARENT);
  } finally {
    await lbUs.close();
    await lbEu.close();
    await euEngine.close();
  }
});
