// The upstream exchange's hold on a request ends when the request is given up: one cancelled while it
// waits in the replica's pool for a connection lets go of its body at once, and never reaches the
// replica; a client that stops reading, an engine that sends an endless SSE event or an enormous
// answer, and a fault in the LB's own handling all end the request and release what it held.
// Fake engines and the LB on loopback, port 0; closed by handle.
import { strict as assert } from "node:assert";
import { createServer, type ServerResponse } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { pino } from "pino";
import { request } from "undici";
import type { LbState } from "@meridian/protocol";
import type { RunningProxy } from "./server";
import { MAX_BUFFERED_BODY_BYTES, redispatchCause, UpstreamStallError } from "./upstream";
import { adminGet, chatBody, completionJson, lbConfig, post, sseChunk, startHoldingEngine, startLb, waitFor } from "../test/helpers";

// Whether a body is still held is a question for the garbage collector.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** The body of the request the LB admitted last, weakly held (so this does not keep it alive). */
function lastBodyOf(lb: RunningProxy): WeakRef<Buffer>[] {
  const job = lb.balancer.inFlight.list().at(-1);
  assert.ok(job);
  return job.request.raw.map((part) => new WeakRef(part));
}

test("a request whose client leaves while it waits for a connection to the replica is dropped at once: its body is freed and the replica never gets it", async () => {
  const engine = await startHoldingEngine("us-1", "us-ashburn");
  // One connection to the replica, which the first request keeps: the next one waits in the pool.
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine], { limits: { maxConnectionsPerReplica: 1 } }));
  try {
    const first = post(`${lb.url}/v1/chat/completions`, chatBody("keeps the only connection"));
    await waitFor("the first request at the engine", () => engine.held.length === 1);
    const client = new AbortController();
    const abandoned = request(`${lb.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(chatBody(`abandoned ${"x".repeat(256 * 1024)}`)),
      signal: client.signal,
    });
    await waitFor("the second request admitted", () => lb.balancer.inFlight.size === 2);
    const body = lastBodyOf(lb);
    client.abort();
    await assert.rejects(abandoned);
    await waitFor("the LB done with it", () => lb.balancer.inFlight.size === 1);
    await waitFor("its body freed", () => {
      gc();
      return body.every((part) => part.deref() === undefined);
    });

    // The first request ends, freeing the connection: the next request gets it, the abandoned one never does.
    engine.held[0]?.res.writeHead(200, { "content-type": "application/json" }).end(completionJson("first"));
    assert.equal((await first).status, 200);
    const next = post(`${lb.url}/v1/chat/completions`, chatBody("after the abandoned one"));
    await waitFor("the next request at the engine", () => engine.held.length === 2);
    assert.match(engine.held[1]?.body ?? "", /after the abandoned one/);
    engine.held[1]?.res.writeHead(200, { "content-type": "application/json" }).end(completionJson("next"));
    assert.equal((await next).status, 200);
    assert.equal(engine.held.length, 2);
  } finally {
    await lb.close();
    await engine.close();
  }
});

/** A fake engine whose every completion `answer` writes; `closed` counts the connections for them
 * that closed (the LB gave up on them). */
async function startAnsweringEngine(
  answer: (res: ServerResponse) => void,
): Promise<{ id: string; region: "us-ashburn"; url: string; closed: () => number; close(): Promise<void> }> {
  let closed = 0;
  const server = createServer((req, res) => {
    if (req.url === "/health") return void res.end("{}");
    if (req.url === "/metrics") return void res.end("sglang:num_running_reqs 0\nsglang:num_queue_reqs 0\n");
    req.resume();
    req.on("end", () => {
      res.on("close", () => closed++);
      answer(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    id: "r1",
    region: "us-ashburn",
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    closed: () => closed,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The LB has nothing of the request left: not in flight, and its replica's counts back to zero. */
async function released(lb: RunningProxy): Promise<boolean> {
  if (lb.balancer.inFlight.size !== 0) return false;
  const r1 = (await adminGet<LbState>(lb, "/admin/state")).replicas.find((r) => r.id === "r1");
  return r1?.inFlight === 0 && r1.queuedTokens === 0;
}

test("a client that stops reading its stream is dropped after limits.bodyTimeoutMs: the engine's connection and the replica's slot are let go", async () => {
  const event = sseChunk("x".repeat(16_000));
  const engine = await startAnsweringEngine((res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    const pump = (): void => {
      while (!res.destroyed) if (!res.write(event)) return void res.once("drain", pump);
    };
    pump();
  });
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine], { limits: { bodyTimeoutMs: 300 } }));
  const client = connect(lb.port, "127.0.0.1");
  try {
    const body = JSON.stringify(chatBody("never read me", { stream: true, max_tokens: 100_000 }));
    client.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    client.pause(); // reads nothing: the LB's writes to it back up, and the LB pauses the engine
    await waitFor("the LB to drop the client that reads nothing", () => engine.closed() === 1 && released(lb), 15_000);
    const event = lb.balancer.telemetry.since(0).at(-1);
    assert.equal(event?.status, 499);
  } finally {
    client.destroy();
    await lb.close();
    await engine.close();
  }
});

test("an engine that sends an SSE event without end has its stream cut with the LB's error event", async () => {
  const engine = await startAnsweringEngine((res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(sseChunk("before"));
    // An event that never ends: single newlines only, past the observer's cap; then silence.
    const line = Buffer.from(`data: ${"g".repeat(64 * 1024)}\n`);
    for (let sent = 0; sent < 5 * 1024 * 1024; sent += line.length) res.write(line);
  });
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]));
  try {
    const response = await request(`${lb.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(chatBody("stream", { stream: true })),
    });
    assert.equal(response.statusCode, 200);
    let text: string | undefined;
    void response.body.text().then((t) => (text = t));
    const received = await waitFor("the client's stream to end", () => text, 15_000);
    assert.ok(received.startsWith(sseChunk("before")), received.slice(0, 200));
    const last = JSON.parse(received.slice(sseChunk("before").length).replace(/^data: /, "")) as { error?: { code?: string } };
    assert.equal(last.error?.code, "upstream_error");
    await waitFor("the LB to let go of the engine and the request", () => engine.closed() === 1 && released(lb));
  } finally {
    await lb.close();
    await engine.close();
  }
});

test("a non-streamed answer larger than MAX_BUFFERED_BODY_BYTES is passed through as it comes, not held whole", async () => {
  const opening = '{"choices":[{"index":0,"message":{"role":"assistant","content":"';
  const closing = '"},"finish_reason":"stop"}]}';
  const middle = Buffer.alloc(MAX_BUFFERED_BODY_BYTES + 1024 * 1024, "a");
  const total = opening.length + middle.length + closing.length;
  let finish: (() => void) | null = null;
  const engine = await startAnsweringEngine((res) => {
    res.writeHead(200, { "content-type": "application/json", "content-length": String(total) });
    res.write(opening);
    res.write(middle);
    // The rest waits until the test has seen the client get most of the answer.
    finish = () => res.end(closing);
  });
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]));
  try {
    let received = 0;
    let ended = false;
    let head: { status: number; contentLength: unknown } | null = null;
    // Not awaited: an LB that held the whole answer would send nothing until the engine finished.
    void request(`${lb.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(chatBody("write a lot")),
    }).then(
      (response) => {
        head = { status: response.statusCode, contentLength: response.headers["content-length"] };
        response.body.on("data", (chunk: Buffer) => (received += chunk.length));
        response.body.on("end", () => (ended = true));
        response.body.on("error", () => undefined);
      },
      () => undefined,
    );
    await waitFor("the client to get the answer before the engine has finished it", () => received > MAX_BUFFERED_BODY_BYTES, 15_000);
    (finish as (() => void) | null)?.();
    await waitFor("the answer's end", () => ended, 15_000);
    assert.deepEqual(head, { status: 200, contentLength: undefined });
    assert.equal(received, total);
    await waitFor("the request finished", () => released(lb));
    const event = lb.balancer.telemetry.since(0).at(-1);
    assert.equal(event?.status, 200);
  } finally {
    await lb.close();
    await engine.close();
  }
});

test("a client that reads slowly but steadily gets a body just past MAX_BUFFERED_BODY_BYTES whole: slow is not gone", async () => {
  const body = Buffer.alloc(MAX_BUFFERED_BODY_BYTES + 64 * 1024, "a");
  const engine = await startAnsweringEngine((res) => {
    res.writeHead(200, { "content-type": "application/json", "content-length": String(body.length) }).end(body);
  });
  // The whole answer takes the client over the stall limit (about 5 s against 2 s), though it never
  // stops reading. The limit leaves room for this process's own pauses: the LB and the client share it.
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine], { limits: { bodyTimeoutMs: 2_000 } }));
  const client = connect(lb.port, "127.0.0.1");
  let received = 0;
  let closed = false;
  client.on("data", (chunk: Buffer) => {
    received += chunk.length;
    client.pause();
    setTimeout(() => client.resume(), 20); // about 64 KiB per 20 ms
  });
  client.on("close", () => {
    closed = true;
  });
  try {
    const request = JSON.stringify(chatBody("embed a lot"));
    client.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(request)}\r\nconnection: close\r\n\r\n${request}`,
    );
    await waitFor("the answer to end", () => closed, 60_000);
    assert.ok(received > body.length, `the client got ${received} of ${body.length} body bytes`);
    assert.equal(lb.balancer.telemetry.since(0).at(-1)?.status, 200);
  } finally {
    client.destroy();
    await lb.close();
    await engine.close();
  }
});

test("a fault in the LB's own handling of an upstream answer is logged and still finishes the request", async () => {
  const engine = await startAnsweringEngine((res) => res.writeHead(200, { "content-type": "application/json" }).end(completionJson("ok")));
  const logged: string[] = [];
  const logger = pino({ level: "error" }, { write: (line: string) => void logged.push(line) });
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]), { logger });
  // As reading a body past V8's string limit did (ERR_STRING_TOO_LONG): the end callback throws.
  const host = lb.balancer as unknown as { onEnd: () => void };
  host.onEnd = () => {
    throw new RangeError("Invalid string length");
  };
  try {
    const result = await post(`${lb.url}/v1/chat/completions`, chatBody("hello"));
    assert.equal(result.status, 200);
    await waitFor("the request finished", () => released(lb));
    assert.ok(
      logged.some((line) => line.includes("Invalid string length")),
      logged.join(""),
    );
    // The LB goes on serving.
    delete (host as { onEnd?: unknown }).onEnd;
    assert.equal((await post(`${lb.url}/v1/chat/completions`, chatBody("again"))).status, 200);
    await waitFor("the second request finished", () => released(lb));
  } finally {
    await lb.close();
    await engine.close();
  }
});

test("a stall tells the core why: a late first byte may still come, the header timeout gives up on it, an unhealthy target never answers", () => {
  assert.equal(redispatchCause(new UpstreamStallError("late", "first_byte_deadline")), "deadline");
  assert.equal(redispatchCause(new UpstreamStallError("cap", "timeout")), "timeout");
  assert.equal(redispatchCause(Object.assign(new Error("Headers Timeout Error"), { code: "UND_ERR_HEADERS_TIMEOUT" })), "timeout");
  for (const reason of ["replica_unhealthy", "peer_unhealthy"] as const) assert.equal(redispatchCause(new UpstreamStallError("gone", reason)), "unhealthy");
});
