// Probes and scrapes run on timers that drop their promise (`setInterval(() => void …)`), so one that
// rejects is an unhandled rejection, which ends a Node 20 process. A replica whose /metrics holds
// +Inf, NaN or a negative gauge used to do exactly that: the LB core threw on the load, outside the
// scrape's try. Now the core records such a scrape as failed, and the runtime lets nothing escape.
import { strict as assert } from "node:assert";
import { createServer } from "node:http";
import { test } from "node:test";
import { LbCore } from "@meridian/lb-core";
import { parseLbConfig } from "@meridian/protocol";
import { lbConfig, listenLoopback } from "../test/helpers";
import { type ReplicaObservation, ReplicaRuntime } from "./replicas";

/** An SGLang engine answering /metrics with `metrics` and /health with 200. */
async function startEngine(metrics: string): Promise<{ url: string; close(): Promise<void> }> {
  return listenLoopback(createServer((req, res) => res.end(req.url === "/metrics" ? metrics : "{}")));
}

/** A runtime for one replica at `url`, its timers far apart: every probe and scrape is the test's. */
function runtimeFor(url: string, observe: (id: string, observation: ReplicaObservation) => void) {
  const config = parseLbConfig(
    lbConfig("lb-us", "us-ashburn", [{ id: "us-1", url, region: "us-ashburn" }], {
      probes: { rttIntervalMs: 60_000, scrapeIntervalMs: 60_000, unhealthyAfter: 2 },
    }),
  );
  return { config, runtime: new ReplicaRuntime(config.replicas[0]!, () => "us-ashburn", config.probes, config.limits, observe) };
}

const badScrapes: [string, string, RegExp][] = [
  ["running +Inf", "sglang:num_running_reqs +Inf\nsglang:num_queue_reqs 0\n", /lack a finite sglang:num_running_reqs/],
  ["running NaN", "sglang:num_running_reqs NaN\nsglang:num_queue_reqs 0\n", /num_running_reqs/],
  ["waiting -1", "sglang:num_running_reqs 1\nsglang:num_queue_reqs -1\n", /^invalid gauge waiting: -1/],
  ["used tokens -5", "sglang:num_running_reqs 1\nsglang:num_queue_reqs 0\nsglang:num_used_tokens -5\n", /^invalid gauge usedTokens: -5/],
];

for (const [name, metrics, reason] of badScrapes) {
  test(`a replica whose /metrics reports ${name}: the scrape resolves and the LB records it as failed`, async () => {
    const engine = await startEngine(metrics);
    let core: LbCore<string> | null = null;
    // What the balancer does with a scrape (balancer.ts).
    const { config, runtime } = runtimeFor(engine.url, (id, o) => {
      if (o.kind !== "scrape" || core === null) return;
      if (o.ok) core.scrapeSucceeded(id, o.load, 1_000, o.cache);
      else core.scrapeFailed(id, o.error);
    });
    core = new LbCore<string>({ config, seed: 1, peerPollIntervalMs: 1_000 });
    try {
      await assert.doesNotReject(runtime.scrapeMetrics());
      const scrape = core.replicas.get("us-1")?.scrape;
      assert.equal(scrape?.ok, false);
      assert.match(scrape?.error ?? "", reason);
      assert.equal(scrape?.load, null);
    } finally {
      await runtime.close();
      await engine.close();
    }
  });
}

test("an observer that throws makes neither a probe nor a scrape reject: it hears the result as a failure", async () => {
  const engine = await startEngine("sglang:num_running_reqs 0\nsglang:num_queue_reqs 0\n");
  const heard: string[] = [];
  const { runtime } = runtimeFor(engine.url, (_id, o) => {
    heard.push(`${o.kind} ${o.ok ? "ok" : o.error}`);
    throw new Error(`observer broke on ${o.kind}`);
  });
  try {
    await assert.doesNotReject(runtime.scrapeMetrics());
    await assert.doesNotReject(runtime.probeRtt());
    assert.deepEqual(heard, [
      "scrape ok",
      "scrape its result was refused: observer broke on scrape",
      "probe ok",
      "probe its result was refused: observer broke on probe",
    ]);
  } finally {
    await runtime.close();
    await engine.close();
  }
});
