// The upstream exchange's hold on a request ends when the request is given up: one cancelled while it
// waits in the replica's pool for a connection lets go of its body at once, and never reaches the
// replica. Fake engines and the LB on loopback, port 0; closed by handle.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { request } from "undici";
import type { RunningProxy } from "./server";
import { chatBody, completionJson, lbConfig, post, startHoldingEngine, startLb, waitFor } from "../test/helpers";

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
