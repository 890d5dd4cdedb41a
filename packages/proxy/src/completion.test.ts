// What a finished request is recorded with: its time to first token starts at the first generated
// token of any kind (text, reasoning, a tool call), streamed or not, so tool-call replies are timed
// and reasoning time is not counted as time to first token.
// Fake engines and the LB on loopback, port 0; closed by handle.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { request } from "undici";
import { chatBody, lbConfig, post, startHoldingEngine, startLb, waitFor } from "../test/helpers";

const event = (delta: unknown): string => `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`;
const TOOL_CALL = { id: "c1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } };

test("a reply that is only a tool call has a time to first token, streamed or not", async () => {
  const engine = await startHoldingEngine("us-1", "us-ashburn");
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]));
  try {
    const streamed = post(`${lb.url}/v1/chat/completions`, chatBody("weather?", { stream: true }));
    const whole = post(`${lb.url}/v1/chat/completions`, chatBody("weather, whole?"));
    await waitFor("both at the engine", () => engine.held.length === 2);
    for (const held of engine.held) {
      if (JSON.parse(held.body).stream === true) {
        held.res.writeHead(200, { "content-type": "text/event-stream" });
        held.res.end(event({ role: "assistant", content: null, tool_calls: [{ index: 0, ...TOOL_CALL }] }) + event({ content: null }) + "data: [DONE]\n\n");
      } else {
        const message = { role: "assistant", content: null, tool_calls: [TOOL_CALL] };
        held.res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ choices: [{ index: 0, message, finish_reason: "tool_calls" }] }));
      }
    }
    assert.equal((await streamed).status, 200);
    assert.equal((await whole).status, 200);
    const events = await waitFor("telemetry of both", () => (lb.balancer.telemetry.since(0).length === 2 ? lb.balancer.telemetry.since(0) : false));
    for (const recorded of events) {
      assert.equal(recorded.status, 200);
      assert.ok(recorded.ttftMs !== null && recorded.ttftMs <= recorded.e2eMs, `a tool-call reply recorded TTFT ${recorded.ttftMs}`);
    }
  } finally {
    await lb.close();
    await engine.close();
  }
});

test("a reasoning stream's first token is its first reasoning token, not its first content after the reasoning", async () => {
  const engine = await startHoldingEngine("us-1", "us-ashburn");
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]));
  try {
    const pending = request(`${lb.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(chatBody("think first", { stream: true })),
    });
    const held = await waitFor("at the engine", () => engine.held[0]);
    const exchange = lb.balancer.inFlight.list()[0]?.exchange;
    assert.ok(exchange);
    held.res.writeHead(200, { "content-type": "text/event-stream" });
    held.res.write(event({ role: "assistant", content: "" }) + event({ reasoning_content: "Let me think" }));
    // The client has the reasoning, so the LB has read it; no content has been generated yet.
    const response = await pending;
    let received = "";
    response.body.setEncoding("utf8").on("data", (chunk: string) => (received += chunk));
    await waitFor("the reasoning at the client", () => received.includes("Let me think"));
    const firstTokenAt = exchange.firstContentAt;
    assert.notEqual(firstTokenAt, null, "the time to first token did not start at the first reasoning token");
    held.res.end(event({ content: "Paris." }) + "data: [DONE]\n\n");
    await waitFor("the stream's end at the client", () => received.endsWith("data: [DONE]\n\n"));
    assert.equal(exchange.firstContentAt, firstTokenAt, "the content after the reasoning moved the first token time");
    const [recorded] = await waitFor("telemetry", () => (lb.balancer.telemetry.since(0).length === 1 ? lb.balancer.telemetry.since(0) : false));
    assert.ok(recorded?.ttftMs != null && recorded.ttftMs < recorded.e2eMs, `TTFT ${recorded?.ttftMs} ms of ${recorded?.e2eMs} ms`);
  } finally {
    await lb.close();
    await engine.close();
  }
});
