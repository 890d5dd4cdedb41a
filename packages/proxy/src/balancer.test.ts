// The balancer's hold on a request ends with its client: a client that hangs up gets its upstream
// request cancelled and its replica slot freed, whichever way its request came (here: pipelined
// behind another on one connection), however many the connection carries at once. Fake engines and
// the LB on loopback, port 0; closed by handle.
import { strict as assert } from "node:assert";
import { once } from "node:events";
import { connect } from "node:net";
import { test } from "node:test";
import type { LbState } from "@meridian/protocol";
import { adminGet, chatBody, completionJson, lbConfig, sseChunk, startHoldingEngine, startLb, waitFor } from "../test/helpers";

/** One chat completion request as raw HTTP/1.1, for writing several back to back on one socket. */
function rawChat(text: string, extra: Record<string, unknown> = {}): string {
  const body = JSON.stringify(chatBody(text, extra));
  return `POST /v1/chat/completions HTTP/1.1\r\nhost: lb\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** The user message of a completion request a fake engine received. */
function userText(body: string): string {
  return (JSON.parse(body) as { messages: { content: string }[] }).messages[1]?.content ?? "";
}

test("a client that hangs up with a pipelined request waiting behind another gets both cancelled upstream, and their slots freed", async () => {
  const engine = await startHoldingEngine("us-1", "us-ashburn");
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]));
  const socket = connect(lb.port, "127.0.0.1");
  try {
    await once(socket, "connect");
    const request = rawChat("pipelined", { stream: true });
    socket.write(request + request);
    socket.resume();
    // Both stream upstream; the second one's response waits for the first to end before it may go out.
    await waitFor("both requests at the engine", () => engine.held.length === 2);
    for (const { res } of engine.held) {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(sseChunk("tok "));
    }
    await waitFor("both replica slots taken", async () => (await adminGet<LbState>(lb, "/admin/state")).replicas[0]?.inFlight === 2);
    socket.destroy();
    await waitFor("both upstream requests cancelled", () => engine.held.every((held) => held.closed));
    await waitFor("both replica slots freed", async () => (await adminGet<LbState>(lb, "/admin/state")).replicas[0]?.inFlight === 0);
    assert.equal(lb.balancer.inFlight.size, 0);
  } finally {
    socket.destroy();
    await lb.close();
    await engine.close();
  }
});

test("a keep-alive connection carrying 12 pipelined requests at once gets them all answered in order, without a listener-leak warning, and hanging up cancels 12 streams", async () => {
  const engine = await startHoldingEngine("us-1", "us-ashburn");
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]));
  const socket = connect(lb.port, "127.0.0.1");
  const leaks: Error[] = [];
  const onWarning = (warning: Error): void => {
    if (warning.name === "MaxListenersExceededWarning") leaks.push(warning);
  };
  process.on("warning", onWarning);
  const PIPELINED = 12;
  try {
    await once(socket, "connect");
    let received = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (received += chunk));
    socket.write(Array.from({ length: PIPELINED }, (_, i) => rawChat(`request ${i}`)).join(""));
    // All of them in flight at once: each one's response waits for those before it.
    await waitFor(`${PIPELINED} requests at the engine`, () => engine.held.length === PIPELINED);
    for (const { body, res } of engine.held) {
      res.writeHead(200, { "content-type": "application/json" }).end(completionJson(`answer to ${userText(body)}`));
    }
    await waitFor(`${PIPELINED} responses`, () => received.match(/answer to request \d+/g)?.length === PIPELINED);
    const answers = received.match(/answer to request \d+/g) ?? [];
    assert.deepEqual(
      answers,
      Array.from({ length: PIPELINED }, (_, i) => `answer to request ${i}`),
    );
    assert.equal(received.match(/HTTP\/1\.1 200 /g)?.length, PIPELINED);

    // The same connection, kept alive, carries as many streams; the client hangs up mid-stream.
    socket.write(Array.from({ length: PIPELINED }, (_, i) => rawChat(`stream ${i}`, { stream: true })).join(""));
    await waitFor(`${PIPELINED} streams at the engine`, () => engine.held.length === 2 * PIPELINED);
    const streams = engine.held.slice(PIPELINED);
    for (const { res } of streams) res.writeHead(200, { "content-type": "text/event-stream" }).write(sseChunk("tok "));
    await waitFor("every stream's replica slot taken", async () => (await adminGet<LbState>(lb, "/admin/state")).replicas[0]?.inFlight === PIPELINED);
    socket.destroy();
    await waitFor("every upstream stream cancelled", () => streams.every((held) => held.closed));
    await waitFor("every replica slot freed", async () => (await adminGet<LbState>(lb, "/admin/state")).replicas[0]?.inFlight === 0);
    assert.equal(lb.balancer.inFlight.size, 0);
    assert.deepEqual(leaks, []);
  } finally {
    process.off("warning", onWarning);
    socket.destroy();
    await lb.close();
    await engine.close();
  }
});
