// Issue 13, item 2: SIGTERM drains a real meridian-proxy process instead of cutting every stream.
//   - It stops accepting: new connections are refused.
//   - Requests held in its queue get an honest answer at once: 503 shutting_down with Retry-After.
//   - Streams in flight finish (0 cut), then the process exits 0.
//   - Past the drain deadline (proxy.drainTimeoutMs), what is left ends with an SSE error event that
//     the openai SDK raises, and the process exits 0. SIGKILL stays abrupt (nothing to test: the
//     kernel closes the sockets).
import { strict as assert } from "node:assert";
import { connect } from "node:net";
import { after, before, test } from "node:test";
import { Pool } from "undici";
import { chatBody, type EngineProcess, faultsConfig, lbState, sdkStreamError, spawnEngine, spawnLb, streamChat, waitFor, within } from "./harness";

// 80 tokens at ~20 ms: each stream lasts about two seconds.
const ENGINE = { maxRunning: 64, itlBaseMs: 20, maxOutputTokens: 400 };
const STREAM_TOKENS = 80;
const IN_FLIGHT = 20;
const HELD = 5;

let engine: EngineProcess;

before(async () => {
  engine = await spawnEngine("e-drain", ENGINE);
});
after(async () => {
  await engine?.stop();
});

/** Whether a new TCP connection to the LB's port is refused (it stopped listening). */
function refuses(url: string): Promise<boolean> {
  const { port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code === "ECONNREFUSED"));
  });
}

test("SIGTERM: held requests get 503 shutting_down, every stream in flight finishes, the process exits 0", async (t) => {
  // maxConcurrency makes the LB hold what exceeds it, so the drain meets held requests too.
  const config = faultsConfig("lb-drain", [engine]);
  config.replicas = config.replicas?.map((r) => ({ ...r, maxConcurrency: IN_FLIGHT }));
  const lb = await spawnLb(config, { drainTimeoutMs: 30_000 });
  try {
    await waitFor("replica healthy", async () => (await lbState(lb.url)).replicas[0]?.healthy === true, 15_000);
    let firstBytes = 0;
    const streams = Array.from({ length: IN_FLIGHT }, (_, i) =>
      streamChat(lb.url, chatBody(`drain ${i}`, { user: `drain-${i}`, max_tokens: STREAM_TOKENS }), () => void firstBytes++),
    );
    await waitFor("every stream started", () => firstBytes === IN_FLIGHT, 15_000);
    const held = Array.from({ length: HELD }, (_, i) => streamChat(lb.url, chatBody(`held ${i}`, { user: `held-${i}`, max_tokens: STREAM_TOKENS })));
    await waitFor("the extra requests held", async () => (await lbState(lb.url)).queue.length === HELD, 15_000);
    const signalledAt = performance.now();
    lb.signal("SIGTERM");
    for (const outcome of await Promise.all(held)) {
      assert.equal(outcome.status, 503);
      assert.equal((JSON.parse(outcome.text) as { error: { code: string } }).error.code, "shutting_down");
    }
    await waitFor("new connections refused", () => refuses(lb.url), 5_000);
    const outcomes = await Promise.all(streams);
    const cut = outcomes.filter((o) => !o.complete);
    assert.equal(cut.length, 0, `cut streams: ${cut.map((o) => o.text.slice(-200)).join(" | ")}`);
    const code = await within("the LB process to exit", lb.exited, 30_000 + 10_000);
    assert.equal(code, 0);
    t.diagnostic(
      `drain: ${IN_FLIGHT} streams in flight, 0 cut; ${HELD} held answered 503 shutting_down; exited 0 ${Math.round(performance.now() - signalledAt)} ms after SIGTERM`,
    );
  } finally {
    await lb.stop();
  }
});

test("past the drain deadline a stream ends with an SSE error event the openai SDK raises, and the process exits 0", async () => {
  const drainTimeoutMs = 500;
  const lb = await spawnLb(faultsConfig("lb-drain-deadline", [engine]), { drainTimeoutMs });
  try {
    await waitFor("replica healthy", async () => (await lbState(lb.url)).replicas[0]?.healthy === true, 15_000);
    // ~8 s of tokens: far past the drain deadline.
    const error = await sdkStreamError(lb.url, 400, () => lb.signal("SIGTERM"));
    assert.match(error.message, /shutting down/);
    assert.equal(await within("the LB process to exit", lb.exited, drainTimeoutMs + 10_000), 0);
  } finally {
    await lb.stop();
  }
});

test("a request arriving during the drain on a connection kept alive from before gets 503 shutting_down", async () => {
  const lb = await spawnLb(faultsConfig("lb-drain-late", [engine]), { drainTimeoutMs: 30_000 });
  const pool = new Pool(lb.url, { connections: 2, pipelining: 1 });
  try {
    await waitFor("replica healthy", async () => (await lbState(lb.url)).replicas[0]?.healthy === true, 15_000);
    const streamOn = (maxTokens: number) =>
      pool.request({
        method: "POST",
        path: "/v1/chat/completions",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(chatBody(`stream of ${maxTokens}`, { stream: true, max_tokens: maxTokens })),
      });
    // Two connections busy: a long stream keeps the drain going while a short one frees its
    // connection, which stays open (its response began before the drain).
    const long = await streamOn(STREAM_TOKENS * 3);
    const short = await streamOn(STREAM_TOKENS / 4);
    lb.signal("SIGTERM");
    assert.match(await short.body.text(), /data: \[DONE\]/);
    const late = await pool.request({
      method: "POST",
      path: "/v1/chat/completions",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(chatBody("too late")),
    });
    assert.equal(late.statusCode, 503);
    assert.equal(late.headers["connection"], "close");
    assert.equal((JSON.parse(await late.body.text()) as { error: { code: string } }).error.code, "shutting_down");
    assert.match(await long.body.text(), /data: \[DONE\]/);
    assert.equal(await within("the LB process to exit", lb.exited, 40_000), 0);
  } finally {
    await pool.close();
    await lb.stop();
  }
});

test("an LB stopped together with its engine (a fleet stopped as one) logs the engine's loss at info, not as an alarm", async () => {
  const doomed = await spawnEngine("e-drain-fleet", ENGINE);
  const lb = await spawnLb(faultsConfig("lb-drain-fleet", [doomed]), { drainTimeoutMs: 30_000 });
  const lines: { level: number; msg: string }[] = [];
  let buffered = "";
  lb.child.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    const complete = buffered.split("\n");
    buffered = complete.pop() ?? "";
    for (const line of complete) if (line.startsWith("{")) lines.push(JSON.parse(line) as { level: number; msg: string });
  });
  try {
    await waitFor("replica healthy", async () => (await lbState(lb.url)).replicas[0]?.healthy === true, 15_000);
    let firstBytes = 0;
    const streams = Array.from({ length: 4 }, (_, i) =>
      streamChat(lb.url, chatBody(`fleet stop ${i}`, { user: `fleet-stop-${i}`, max_tokens: STREAM_TOKENS }), () => void firstBytes++),
    );
    await waitFor("every stream started", () => firstBytes === 4, 15_000);
    lb.signal("SIGTERM");
    await waitFor("the LB draining (new connections refused)", () => refuses(lb.url), 5_000);
    await doomed.stop();
    await Promise.all(streams);
    assert.equal(await within("the LB process to exit", lb.exited, 40_000), 0);
    assert.ok(
      lines.some((l) => l.level === 30 && l.msg === "replica unreachable while this LB shuts down"),
      lines.map((l) => `${l.level} ${l.msg}`).join(" | "),
    );
    assert.deepEqual(
      lines.filter((l) => l.level >= 40).map((l) => l.msg),
      [],
      "no warning: the engine went away because the fleet is stopping",
    );
  } finally {
    await lb.stop();
    await doomed.stop();
  }
});
