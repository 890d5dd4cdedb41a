// The LB learns a streamed prompt when its engine holds it: at the first token, not at the response
// headers, which vLLM and SGLang send before their prefill. A request sharing the prefix that arrives
// in between must not be credited with a cache the engine does not have yet (its report of no cached
// tokens would read as a lost cache and clear the replica's part of the index).
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { chatBody, post, sseChunk, startHeldReplicaLb, waitFor } from "./helpers";

let fleet: Awaited<ReturnType<typeof startHeldReplicaLb>>;

before(async () => {
  fleet = await startHeldReplicaLb("us-held", { policy: "gorgo" });
});
after(async () => {
  await fleet?.close();
});

const routes = () => fleet.routes();

test("a streamed prompt is learned at its first token, not at the headers the engine sends before its prefill", async () => {
  const reply = post(`${fleet.lb.url}/v1/chat/completions`, chatBody("a long shared system prompt and a question", { stream: true }));
  const held = await waitFor("the engine received the request", () => fleet.engine.held[0]);
  // The engine answers at once with its headers and starts its prefill.
  held.res.writeHead(200, { "content-type": "text/event-stream" });
  held.res.flushHeaders();
  // The headers reached the LB before this admin request did: the index must still not hold the prompt.
  assert.equal(await routes(), 0, "no route learned from the headers alone");
  held.res.write(sseChunk("first token"));
  await waitFor("the prompt learned at the first token", async () => ((await routes()) > 0 ? true : undefined));
  held.res.end("data: [DONE]\n\n");
  const result = await reply;
  assert.equal(result.status, 200, result.text);
  assert.match(result.text, /first token/);
});

test("a refusal still goes to the client at its headers, and teaches the index nothing", async () => {
  const before = await routes();
  const reply = post(`${fleet.lb.url}/v1/chat/completions`, chatBody("a prompt the engine refuses", { stream: true }));
  const held = await waitFor("the engine received the request", () => fleet.engine.held[1]);
  held.res.writeHead(400, { "content-type": "application/json" });
  held.res.end(JSON.stringify({ error: { message: "bad request", type: "invalid_request_error" } }));
  const result = await reply;
  assert.equal(result.status, 400, result.text);
  assert.equal(await routes(), before);
});
