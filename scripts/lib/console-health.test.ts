// npm start's readiness probe (scripts/lib/console-health.ts): only the console that echoes this run's
// nonce counts, and a server that never answers costs one timeout, not the whole wait.
import { strict as assert } from "node:assert";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { after, test } from "node:test";
import { consoleAnswers } from "./console-health";

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
