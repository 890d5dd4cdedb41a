// npm start's readiness probe (scripts/lib/console-health.ts): only the console that echoes this run's
// nonce counts, and a server that never answers costs one timeout, not the whole wait; a probe that
// never settles at all (whatever fetch does) does not hold the wait, nor npm start's lock, for ever.
import { strict as assert } from "node:assert";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { after, test } from "node:test";
import { consoleAnswers, waitForConsole } from "./console-health";

const servers: Server[] = [];
after(() => {
  for (const server of servers) server.close();
  for (const server of servers) server.closeAllConnections();
});

/** A server on a free loopback port that answers /api/health with `respond` (null: never answers). */
async function serve(respond: { status: number; body: string } | null): Promise<string> {
  const server = createServer((_req, res) => {
    if (respond === null) return; // accepts the request and says nothing
    res.writeHead(respond.status, { "content-type": "application/json" }).end(respond.body);
  });
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

test("the console that echoes this run's nonce is ready", async () => {
  const url = await serve({ status: 200, body: JSON.stringify({ ok: true, leader: { self: true }, startNonce: "n0nce" }) });
  assert.equal(await consoleAnswers(url, "n0nce"), "ours");
});

test("another healthy server on the port is not this run's console", async () => {
  const withoutNonce = await serve({ status: 200, body: JSON.stringify({ ok: true, leader: { self: true } }) });
  assert.equal(await consoleAnswers(withoutNonce, "n0nce"), "other");
  const otherRun = await serve({ status: 200, body: JSON.stringify({ ok: true, startNonce: "another-run" }) });
  assert.equal(await consoleAnswers(otherRun, "n0nce"), "other");
  const notJson = await serve({ status: 200, body: "<html>hello</html>" });
  assert.equal(await consoleAnswers(notJson, "n0nce"), "other");
});

test("an unhealthy answer, or nothing listening, is not ready", async () => {
  const unhealthy = await serve({ status: 503, body: JSON.stringify({ ok: false, startNonce: "n0nce" }) });
  assert.equal(await consoleAnswers(unhealthy, "n0nce"), "none");
  const gone = await serve(null);
  const port = new URL(gone).port;
  const server = servers.pop()!;
  server.close();
  await once(server, "close");
  assert.equal(await consoleAnswers(`http://127.0.0.1:${port}`, "n0nce"), "none");
});

test("a server that never answers costs one probe's timeout", async () => {
  const silent = await serve(null);
  const started = Date.now();
  assert.equal(await consoleAnswers(silent, "n0nce", 300), "none");
  const took = Date.now() - started;
  assert.ok(took >= 250 && took < 5_000, `the probe gave up after ${took} ms`);
});

/** A probe that never settles (fetch outliving its AbortSignal), then, if given, answers. */
function hangingFirst(then?: "ours" | "other" | "none") {
  const calls: number[] = [];
  const probe = (_url: string, _nonce: string, timeoutMs: number) => {
    calls.push(timeoutMs);
    return calls.length === 1 || then === undefined ? new Promise<never>(() => {}) : Promise.resolve(then);
  };
  return { probe, calls };
}

test("a probe that never settles does not hold the wait: the next probe finds the console", { timeout: 30_000 }, async () => {
  const { probe, calls } = hangingFirst("ours");
  const result = await waitForConsole("http://127.0.0.1:9", "n0nce", { withinMs: 20_000, everyMs: 10, probeTimeoutMs: 50, probe });
  assert.deepEqual(result, { answer: "ours", otherAnswered: false });
  assert.equal(calls.length, 2);
});

test("probes that never settle end the wait at its deadline with no answer", { timeout: 30_000 }, async () => {
  const { probe, calls } = hangingFirst();
  const result = await waitForConsole("http://127.0.0.1:9", "n0nce", { withinMs: 300, everyMs: 10, probeTimeoutMs: 5_000, probe });
  assert.deepEqual(result, { answer: "none", otherAnswered: false });
  assert.equal(calls.length, 1, "the one probe outlived the deadline; none followed");
});

test("the wait says whether something else answered, and stops when told", { timeout: 30_000 }, async () => {
  const other = await serve({ status: 200, body: JSON.stringify({ ok: true }) });
  assert.deepEqual(await waitForConsole(other, "n0nce", { withinMs: 200, everyMs: 10 }), { answer: "other", otherAnswered: true });
  const ours = await serve({ status: 200, body: JSON.stringify({ ok: true, startNonce: "n0nce" }) });
  assert.deepEqual(await waitForConsole(ours, "n0nce", { withinMs: 20_000 }), { answer: "ours", otherAnswered: false });
  let probes = 0;
  const result = await waitForConsole(other, "n0nce", {
    withinMs: 20_000,
    everyMs: 10,
    stopped: () => probes >= 2,
    probe: async () => {
      probes += 1;
      return "none";
    },
  });
  assert.deepEqual(result, { answer: "stopped", otherAnswered: false });
});
