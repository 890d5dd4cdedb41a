// The balancer's hold on a request ends with its client: a client that hangs up gets its upstream
// request cancelled and its replica slot freed, whichever way its request came (here: pipelined
// behind another on one connection). Fake engines and the LB on loopback, port 0; closed by handle.
import { strict as assert } from "node:assert";
import { once } from "node:events";
import { connect } from "node:net";
import { test } from "node:test";
import type { LbState } from "@meridian/protocol";
import { adminGet, chatBody, lbConfig, sseChunk, startHoldingEngine, startLb, waitFor } from "../test/helpers";

test("a client that hangs up with a pipelined request waiting behind another gets both cancelled upstream, and their slots freed", async () => {
  const engine = await startHoldingEngine("us-1", "us-ashburn");
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]));
  const socket = connect(lb.port, "127.0.0.1");
  try {
    await once(socket, "connect");
    const body = JSON.stringify(chatBody("pipelined", { stream: true }));
    const request = `POST /v1/chat/completions HTTP/1.1\r\nhost: lb\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
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
