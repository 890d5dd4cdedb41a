// A replica's probes and scrapes take the connect timeout of the config in force: a config push that
// changes it reaches their connections as it reaches the request traffic's (request-pool.ts), and a
// probe already waiting on the old connections still gets its answer. A fake engine on loopback,
// port 0; closed by handle.
import { strict as assert } from "node:assert";
import { createServer, type RequestListener, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { mock, test } from "node:test";
import { Pool } from "undici";
import { parseLbConfig, type LbConfigInput } from "@meridian/protocol";
import { lbConfig, waitFor } from "../test/helpers";
import { ReplicaRuntime, type ReplicaObservation } from "./replicas";

/** An idle SGLang engine that holds its first /health until the test answers it. */
function holdingFirstProbe(): { handler: RequestListener; heldProbe: ServerResponse[] } {
  const heldProbe: ServerResponse[] = [];
  let probes = 0;
  const handler: RequestListener = (req, res) => {
    if (req.url === "/health" && probes++ === 0) return void heldProbe.push(res);
    if (req.url === "/health") return void res.end("{}");
    res.end("sglang:num_running_reqs 0\nsglang:num_queue_reqs 0\n");
  };
  return { handler, heldProbe };
}

/** A replica runtime against an engine served by `handler` on loopback (port 0), probes and scrapes
 * only when the test asks; its observations in `observations`. Closed by `close`. */
async function runtimeOver(handler: RequestListener, extra: Partial<LbConfigInput> = {}) {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const config = parseLbConfig(
    lbConfig("lb-us", "us-ashburn", [{ id: "us-1", url, region: "us-ashburn" }], {
      probes: { rttIntervalMs: 60_000, scrapeIntervalMs: 60_000, unhealthyAfter: 2 },
      ...extra,
    }),
  );
  const observations: ReplicaObservation[] = [];
  const runtime = new ReplicaRuntime(
    config.replicas[0]!,
    () => "us-ashburn",
    config.probes,
    config.limits,
    (_id, observation) => {
      observations.push(observation);
    },
  );
  return {
    runtime,
    config,
    observations,
    close: async () => {
      await runtime.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

test("a pushed connectTimeoutMs reaches the replica's probe and scrape connections; a probe waiting on the old ones still gets its answer", async () => {
  const engine = holdingFirstProbe();
  // Probes far apart (runtimeOver): every probe and scrape here is one the test sends.
  const { runtime, config, observations, close } = await runtimeOver(engine.handler, { limits: { connectTimeoutMs: 5_000 } });
  // Which pool each probe and scrape went out on.
  const sent = mock.method(Pool.prototype, "request");
  try {
    assert.equal(runtime.controlPoolOptions.connectTimeout, 5_000);
    const oldPool = runtime.controlPool;
    const waiting = runtime.probeRtt();
    await waitFor("the first probe at the engine", () => engine.heldProbe.length === 1);

    runtime.updateLimits({ ...config.limits, connectTimeoutMs: 1_000 });
    assert.equal(runtime.controlPoolOptions.connectTimeout, 1_000);
    await runtime.probeRtt();
    await runtime.scrapeMetrics();
    const [before, afterProbe, afterScrape] = sent.mock.calls;
    assert.equal(sent.mock.callCount(), 3);
    assert.equal(before?.this, oldPool);
    assert.equal(afterProbe?.this, runtime.controlPool);
    assert.equal(afterScrape?.this, runtime.controlPool);
    assert.notEqual(runtime.controlPool, oldPool);

    // The old pool takes no new probe, but the one it carries is not cut.
    assert.equal(oldPool.closed, true);
    assert.equal(oldPool.destroyed, false);
    engine.heldProbe[0]?.end("{}");
    await waiting;
    assert.deepEqual(
      observations.map((observation) => `${observation.kind} ${observation.ok}`),
      ["probe true", "scrape true", "probe true"],
    );
  } finally {
    sent.mock.restore();
    await close();
  }
});

test("limits that leave the connect timeout as it was keep the replica's probe connections", async () => {
  const { runtime, config, close } = await runtimeOver(holdingFirstProbe().handler);
  try {
    const pool = runtime.controlPool;
    runtime.updateLimits({ ...config.limits, headersTimeoutMs: config.limits.headersTimeoutMs + 1, maxConnectionsPerReplica: 1 });
    assert.equal(runtime.controlPool, pool);
    assert.equal(pool.closed, false);
  } finally {
    await close();
  }
});

test("a scrape asked for while one is in flight follows it: never overlapping, never older than the asking", async () => {
  // An engine busy enough to hold the first /metrics; its counters grow meanwhile.
  const held: ServerResponse[] = [];
  let scrapes = 0;
  const metrics = (promptTokens: number) => `sglang:num_running_reqs 1\nsglang:num_queue_reqs 0\nsglang:prompt_tokens_total ${promptTokens}\n`;
  const { runtime, observations, close } = await runtimeOver((req, res) => {
    if (req.url !== "/metrics") return void res.end("{}");
    scrapes += 1;
    if (scrapes === 1) return void held.push(res);
    res.end(metrics(2_000));
  });
  try {
    const first = runtime.scrapeMetrics();
    await waitFor("the first scrape at the engine", () => held.length === 1);
    // The next tick of a short interval, and a caller that changed the load (scrapeNow): neither may
    // overtake the scrape the engine still holds, and both want metrics read after they asked.
    const second = runtime.scrapeMetrics();
    const third = runtime.scrapeMetrics();
    assert.equal(scrapes, 1, "no second scrape while the first is out");
    held[0]?.end(metrics(1_000));
    await Promise.all([first, second, third]);
    assert.equal(scrapes, 2, "one scrape followed, shared by both callers");
    const seen = observations.flatMap((o) => (o.kind === "scrape" && o.ok ? Object.values(o.cache.epoch?.counters ?? {}) : []));
    assert.deepEqual(seen, [1_000, 2_000], "observations in the order the engine produced them, the last read after asking");
  } finally {
    await close();
  }
});

test("a /metrics far larger than any engine's is not parsed: the scrape fails naming the size", async () => {
  // Some 6 MB of series: an exporter gone wrong, which would stall the LB's event loop to parse.
  const huge = `sglang:num_running_reqs 1\nsglang:num_queue_reqs 0\n${"x_series_total 1\n".repeat(400_000)}`;
  const { runtime, observations, close } = await runtimeOver((_req, res) => void res.end(huge));
  try {
    await runtime.scrapeMetrics();
    const scrape = observations.find((o) => o.kind === "scrape");
    assert.ok(scrape && !scrape.ok && /metrics over 4194304 bytes/.test(scrape.error), JSON.stringify(scrape));
  } finally {
    await close();
  }
});
