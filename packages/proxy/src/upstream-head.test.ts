// The head the client gets for an upstream's answer: it goes out with the first bytes the LB forwards
// (a stream's first whole event), so a stream that fails before then is retried elsewhere unseen; and
// an upstream's refusal keeps the headers that tell the client when to try again.
// Fake engines and the LB on loopback, port 0; closed by handle.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import type { LbState } from "@meridian/protocol";
import { adminGet, chatBody, lbConfig, post, servedBy, sseChunk, startHoldingEngine, startLb, startPeeredPair, waitFor } from "../test/helpers";

test("a stream that fails before its first whole event reached the client is retried on another replica, unseen by the client", async () => {
  const e1 = await startHoldingEngine("us-1", "us-ashburn");
  const e2 = await startHoldingEngine("us-2", "us-ashburn");
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [e1, e2], { policy: "round-robin" }));
  try {
    const answer = post(`${lb.url}/v1/chat/completions`, chatBody("hi", { stream: true }));
    await waitFor("dispatched", () => e1.held.length + e2.held.length === 1);
    const [first, second] = e1.held.length === 1 ? [e1, e2] : [e2, e1];
    const held = first.held[0];
    assert.ok(held);
    // The engine's head and half of its first event (a TCP segment boundary, or an engine that dies
    // while writing it) reach the LB, then the connection is reset.
    held.res.writeHead(200, { "content-type": "text/event-stream" });
    held.res.write('data: {"choices":[{"index":0,"delta":{"content":"hal');
    await waitFor("the LB received the partial event", () => lb.balancer.inFlight.list()[0]?.exchange?.firstByteAt != null);
    assert.equal(lb.balancer.inFlight.list()[0]?.res.headersSent, false, "the client's head went out before any event");
    held.res.socket?.destroy();
    const retried = await waitFor("retried on the other replica", () => second.held[0]);
    retried.res.writeHead(200, { "content-type": "text/event-stream" });
    retried.res.end(`${sseChunk("whole")}data: [DONE]\n\n`);
    const result = await answer;
    assert.equal(result.status, 200);
    assert.equal(servedBy(result), second.id);
    assert.equal(result.text, `${sseChunk("whole")}data: [DONE]\n\n`, "the client saw only the second replica's stream");
    const state = await adminGet<LbState>(lb, "/admin/state");
    assert.deepEqual(
      state.replicas.map((r) => r.inFlight),
      [0, 0],
    );
  } finally {
    await lb.close();
    await e1.close();
    await e2.close();
  }
});

const RATE_LIMITED = JSON.stringify({ error: { message: "rate limited", type: "rate_limit_error", code: "rate_limit_exceeded", param: null } });
const BACK_OFF_HEADERS = { "retry-after": "7", "retry-after-ms": "7000", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "7s" };

/** The back-off headers a client got. */
function backOffHeaders(headers: Record<string, string | string[] | undefined>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => name.startsWith("retry-after") || name.startsWith("x-ratelimit-")));
}

test("an engine's 429 reaches the client with its Retry-After and x-ratelimit-* headers, through a peer LB too", async () => {
  const usEngine = await startHoldingEngine("us-1", "us-ashburn");
  const euEngine = await startHoldingEngine("eu-1", "eu-frankfurt");
  // lb-us's own replica is disabled: it forwards every request to lb-eu, which passes it to eu-1.
  const usConfig = lbConfig("lb-us", "us-ashburn", [usEngine], { crossRegion: "via-peer" });
  usConfig.replicas = (usConfig.replicas ?? []).map((r) => ({ ...r, state: "disabled" as const }));
  const [lbUs, lbEu] = await startPeeredPair(usConfig, lbConfig("lb-eu", "eu-frankfurt", [euEngine], { crossRegion: "via-peer" }));
  try {
    const direct = post(`${lbEu.url}/v1/chat/completions`, chatBody("to eu"));
    const forwarded = post(`${lbUs.url}/v1/chat/completions`, chatBody("via eu"));
    await waitFor("both at eu-1", () => euEngine.held.length === 2);
    for (const held of euEngine.held)
      held.res.writeHead(429, { "content-type": "application/json", "x-engine-internal": "1", ...BACK_OFF_HEADERS }).end(RATE_LIMITED);
    for (const result of [await direct, await forwarded]) {
      assert.equal(result.status, 429);
      assert.deepEqual(backOffHeaders(result.headers), BACK_OFF_HEADERS, `headers the client got: ${JSON.stringify(result.headers)}`);
      assert.equal(result.headers["x-engine-internal"], undefined);
      assert.equal(JSON.parse(result.text).error.code, "rate_limit_exceeded");
    }
    assert.equal((await forwarded).headers["x-meridian-forwarded-to"], "lb-eu");
  } finally {
    await lbUs.close();
    await lbEu.close();
    await usEngine.close();
    await euEngine.close();
  }
});

test("a 503 passed on once its one retry is used up keeps the Retry-After its replica sent", async () => {
  const e1 = await startHoldingEngine("us-1", "us-ashburn");
  const e2 = await startHoldingEngine("us-2", "us-ashburn");
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [e1, e2], { policy: "round-robin" }));
  try {
    const answer = post(`${lb.url}/v1/chat/completions`, chatBody("hi"));
    const overloaded = JSON.stringify({ error: { message: "overloaded", type: "server_error", code: "overloaded", param: null } });
    const first = await waitFor("the first try", () => [...e1.held, ...e2.held][0]);
    first.res.writeHead(503, { "content-type": "application/json", "retry-after": "3" }).end(overloaded);
    const second = await waitFor("the retry on the other replica", () => [...e1.held, ...e2.held][1]);
    second.res.writeHead(503, { "content-type": "application/json", "retry-after": "5" }).end(overloaded);
    const result = await answer;
    assert.equal(result.status, 503);
    assert.equal(result.headers["retry-after"], "5");
    assert.equal(JSON.parse(result.text).error.code, "overloaded");
  } finally {
    await lb.close();
    await e1.close();
    await e2.close();
  }
});
