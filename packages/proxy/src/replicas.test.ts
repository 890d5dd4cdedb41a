import { strict as assert } from "node:assert";
import { test } from "node:test";
import { pino } from "pino";
import { parseLbConfig } from "@meridian/protocol";
import { nextRttEwma, ReplicaRuntime, RTT_EWMA_ALPHA } from "./replicas";

test("RTT EWMA: the first sample seeds, then alpha 0.3", () => {
  assert.equal(RTT_EWMA_ALPHA, 0.3);
  let rtt = nextRttEwma(null, 100);
  assert.equal(rtt, 100);
  rtt = nextRttEwma(rtt, 200);
  assert.equal(rtt, 130);
  rtt = nextRttEwma(rtt, 130);
  assert.ok(Math.abs(rtt - 130) < 1e-9);
});

test("admitted concurrency is the running count last seen while requests were waiting", async () => {
  const config = parseLbConfig({
    schema: "meridian.lb-config/1",
    version: 1,
    lbId: "lb",
    region: "r",
    replicas: [{ id: "a", url: "http://127.0.0.1:9", region: "r", model: "m" }],
  });
  const replica = new ReplicaRuntime(config.replicas[0]!, () => "r", config.probes, config.limits, pino({ level: "silent" }), () => {});
  try {
    replica.recordScrape({ running: 5, waiting: 0, usedTokens: 0 }, 1_000);
    assert.equal(replica.concurrencyCap(), null);
    replica.recordScrape({ running: 12, waiting: 3, usedTokens: 0 }, 2_000);
    assert.equal(replica.concurrencyCap(), 12);
    replica.recordScrape({ running: 4, waiting: 0, usedTokens: 0 }, 3_000);
    assert.equal(replica.concurrencyCap(), 12);
    // Fresh within 3 scrape intervals, stale after.
    assert.deepEqual(replica.freshLoad(3_000 + config.probes.scrapeIntervalMs), { running: 4, waiting: 0, usedTokens: 0 });
    assert.equal(replica.freshLoad(3_000 + 4 * config.probes.scrapeIntervalMs), null);
  } finally {
    await replica.close();
  }
});
