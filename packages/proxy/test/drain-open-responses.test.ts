// A graceful drain (SIGTERM) finishes every inference response it finds, however far along: a request
// whose body is still arriving is served, and an answer the LB has finished but its client has not
// read yet reaches the client whole. The drain waited for the upstream exchanges alone, and then
// closed every connection: the first client saw ECONNRESET, the second a 12 MB answer cut at 3.9 MB.
// And an answer the LB held whole, whose client stops reading it, is dropped after
// limits.bodyTimeoutMs, as a stream's is: it stayed in the LB's memory for as long as the client kept
// its connection, while one that reads it slowly but steadily gets all of it. LB and engines in
// process, on 127.0.0.1.
import { strict as assert } from "node:assert";
import { connect } from "node:net";
import { type TestContext, test } from "node:test";
import { request } from "undici";
import { adminGet, chatBody, lbConfig, startHeldReplicaLb, startLb, waitFor } from "./helpers";
import { startRecordingEngine } from "./recording-engine";

type State = { replicas: { healthy: boolean }[] };
const healthy = (lb: Awaited<ReturnType<typeof startLb>>) =>
  waitFor("the replica healthy", async () => (await adminGet<State>(lb, "/admin/state")).replicas.every((r) => r.healthy));

/** An engine answering every request with a non-streamed chat answer of `bytes` characters. */
function engineAnswering(bytes: number) {
  const answer = JSON.stringify({ choices: [{ index: 0, message: { role: "assistant", content: "x".repeat(bytes) }, finish_reason: "stop" }] });
  return startRecordingEngine((_seen, res) => void res.writeHead(200, { "content-type": "application/json" }).end(answer));
}

/** An LB with a healthy replica answering `bytes` characters, both closed after the test. */
async function fleetAnswering(t: TestContext, bytes: number, limits: Record<string, number> = {}) {
  const engine = await engineAnswering(bytes);
  t.after(() => engine.close());
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine], { limits } as never));
  t.after(() => lb.close());
  await healthy(lb);
  return { engine, lb };
}

/** The head of a chat request sent by hand on a raw socket, for a body of `length` bytes. */
const chatHead = (length: number, headers = "") =>
  `POST /v1/chat/completions HTTP/1.1\r\nhost: lb\r\n${headers}content-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;

test("a request still sending its body when the drain begins is served, not reset", async (t) => {
  const { engine, lb } = await fleetAnswering(t, 2);
  const body = Buffer.from(JSON.stringify(chatBody("uploaded slowly")));
  const socket = connect(lb.port, "127.0.0.1");
  t.after(() => socket.destroy());
  let received = "";
  socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")));
  const ended = new Promise<string>((resolve) => {
    socket.once("close", () => resolve("closed"));
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(`error ${error.code}`));
  });
  socket.write(chatHead(body.length));
  socket.write(body.subarray(0, 20));
  await waitFor("the LB to have the request", () => lb.openResponses() === 1);

  const drained = lb.drain(10_000);
  socket.write(body.subarray(20));
  assert.equal(await ended, "closed");
  await drained;
  assert.match(received, /^HTTP\/1\.1 200 /);
  assert.equal(engine.seen.length, 1);
});

test("an answer still on its way to the client when the drain begins reaches it whole", async (t) => {
  const { lb } = await fleetAnswering(t, 12 * 1024 * 1024);
  const response = await request(`${lb.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(chatBody("a long answer")),
  });
  assert.equal(response.statusCode, 200);
  // The LB has handed the whole answer to the client's connection; the client has read little of it.
  await waitFor("the exchange to end at the LB", () => lb.balancer.inFlight.size === 0);
  assert.equal(lb.openResponses(), 1);

  const drained = lb.drain(10_000);
  let received = 0;
  for await (const chunk of response.body) received += (chunk as Buffer).length;
  await drained;
  assert.equal(received, Number(response.headers["content-length"]));
});

test("a client that stops reading an answer the LB held whole is dropped after limits.bodyTimeoutMs", async (t) => {
  const { lb } = await fleetAnswering(t, 12 * 1024 * 1024, { bodyTimeoutMs: 300 });
  const body = JSON.stringify(chatBody("an answer never read"));
  const socket = connect(lb.port, "127.0.0.1");
  t.after(() => socket.destroy());
  socket.pause(); // reads nothing
  socket.write(chatHead(Buffer.byteLength(body)) + body);
  await waitFor("the exchange to end at the LB", () => lb.balancer.telemetry.since(0).some((event) => event.status === 200), 15_000);
  // Dropped: the response closes at the LB, and what the client did not take is freed.
  await waitFor("the LB to drop the client that reads nothing", () => lb.openResponses() === 0, 15_000);

  // A client that reads gets the whole answer.
  const read = await request(`${lb.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body });
  assert.equal((await read.body.arrayBuffer()).byteLength, Number(read.headers["content-length"]));
});

test("a client reading an answer the LB held whole slowly but steadily gets all of it", async (t) => {
  const { lb } = await fleetAnswering(t, 12 * 1024 * 1024, { bodyTimeoutMs: 1_000 });
  const body = JSON.stringify(chatBody("an answer read slowly"));
  const socket = connect(lb.port, "127.0.0.1");
  t.after(() => socket.destroy());
  // The client takes about 3 MB a second, 150 KB at a time: never a second without reading, 4 s in all.
  let allowed = 150 * 1024;
  let received = 0;
  const reader = setInterval(() => {
    allowed += 150 * 1024;
    socket.resume();
  }, 50);
  t.after(() => clearInterval(reader));
  socket.on("data", (chunk: Buffer) => {
    received += chunk.length;
    if (received >= allowed) socket.pause();
  });
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.write(chatHead(Buffer.byteLength(body), "connection: close\r\n") + body);
  await closed;
  assert.ok(received > 12 * 1024 * 1024, `the connection closed after ${received} bytes of a 12 MiB answer`);
});

test("a pipelined request whose client hangs up stops counting as open", async (t) => {
  const fleet = await startHeldReplicaLb("e1");
  t.after(() => fleet.close());
  const { lb, engine } = fleet;
  const request = (text: string) => {
    const body = JSON.stringify(chatBody(text));
    return chatHead(Buffer.byteLength(body)) + body;
  };
  const socket = connect(lb.port, "127.0.0.1");
  socket.on("error", () => {});
  socket.write(request("first") + request("second")); // pipelined: the second's answer waits for the first's
  await waitFor("both requests at the engine", () => engine.held.length === 2);
  assert.equal(lb.openResponses(), 2);
  socket.destroy();
  // The second's response never gets the connection, so it emits no 'close' of its own.
  await waitFor("no response left open", () => lb.openResponses() === 0);
});
