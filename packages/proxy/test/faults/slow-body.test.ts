// Issue 13, item 4: a partial request body does not hold a socket forever. 250 connections that send
// their headers and 10 bytes of a 1,000-byte body, and one whose chunk size is ffffffffffffffff, each
// get a 408 in OpenAI's format once limits.clientBodyTimeoutMs has passed, and are closed; the LB
// keeps serving meanwhile.
import { strict as assert } from "node:assert";
import { connect, type Socket } from "node:net";
import { after, before, test } from "node:test";
import { pino } from "pino";
import { request } from "undici";
import { startProxy, type RunningProxy } from "../../src/index";
import { chatBody, type EngineProcess, faultsConfig, lbState, spawnEngine, TOKEN, waitFor, within } from "./harness";

const BODY_TIMEOUT_MS = 1_000;
const CONNECTIONS = 250;

let engine: EngineProcess;
let lb: RunningProxy;

before(async () => {
  engine = await spawnEngine("e-body");
  lb = await startProxy({
    config: faultsConfig("lb-body", [engine], { limits: { clientBodyTimeoutMs: BODY_TIMEOUT_MS } }),
    token: TOKEN,
    logger: pino({ level: "silent" }),
    settings: { port: 0, host: "127.0.0.1" },
  });
  await waitFor("replica healthy", async () => (await lbState(lb.url)).replicas[0]?.healthy === true, 15_000);
});

after(async () => {
  await lb?.close();
  await engine?.stop();
});

interface RawExchange {
  socket: Socket;
  /** Everything the LB sent, once it closed the connection. */
  closed: Promise<string>;
}

/** Opens a connection, writes `head` (and nothing more), and collects what comes back until close. */
function rawExchange(port: number, head: string): RawExchange {
  const socket = connect(port, "127.0.0.1");
  let received = "";
  socket.on("data", (chunk: Buffer) => (received += chunk.toString("utf8")));
  const closed = new Promise<string>((resolve) => {
    socket.on("close", () => resolve(received));
    socket.on("error", () => undefined);
  });
  socket.write(head);
  return { socket, closed };
}

function assert408(response: string): void {
  assert.match(response, /^HTTP\/1\.1 408 /);
  assert.match(response, /connection: close/i);
  const body = JSON.parse(response.slice(response.indexOf("\r\n\r\n") + 4)) as { error: { code: string; type: string } };
  assert.equal(body.error.code, "request_timeout");
  assert.equal(body.error.type, "invalid_request_error");
}

test("250 connections stalled 10 bytes into a 1,000-byte body each get a 408 and are closed", async () => {
  const head = (i: number): string =>
    `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 1000\r\nx-session-id: slow-${i}\r\n\r\n{"model":"`;
  const exchanges = Array.from({ length: CONNECTIONS }, (_, i) => rawExchange(lb.port, head(i)));
  // Meanwhile the LB serves others.
  const served = await request(`${lb.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(chatBody("hi")),
  });
  assert.equal(served.statusCode, 200);
  await served.body.dump();
  // Bounded: every connection must be closed well within a few body deadlines.
  const responses = await within("every stalled connection closed", Promise.all(exchanges.map((e) => e.closed)), 20 * BODY_TIMEOUT_MS);
  for (const response of responses) assert408(response);
});

test("a chunk size of ffffffffffffffff gets a 408, not a hang", async () => {
  const exchange = rawExchange(
    lb.port,
    'POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nffffffffffffffff\r\n{"model"',
  );
  const response = await within("the stalled chunked connection closed", exchange.closed, 20 * BODY_TIMEOUT_MS);
  assert408(response);
});
