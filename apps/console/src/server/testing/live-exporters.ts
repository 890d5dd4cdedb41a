// A live LB (a meridian-proxy in front of one simulated engine) beside a test's console, for the tests
// that hold the shipped ops files (the Grafana dashboard, the Prometheus alert rules) to the series the
// two really export. The test makes its console (createHarness) itself: scripts/test.mjs runs a file
// that names the harness on PostgreSQL too.
import "server-only";
import assert from "node:assert/strict";
import pino from "pino";
import { request } from "undici";
import { startProxy, type RunningProxy } from "@meridian/proxy";
import { metricFamilies } from "@meridian/proxy/testing";
import { startEngineServer } from "@meridian/sim";
import type { Harness } from "./harness";

/** The LB's metrics token (MERIDIAN_LB_METRICS_TOKEN): a scrape that presents it reads the client series. */
export const LIVE_METRICS_TOKEN = "ops-files-scrape-token";

export interface LiveExporters {
  lb: RunningProxy;
  /** The metric families of the LB's `GET /metrics` (with `bearer`: as a scrape presenting it reads
   * them) and of the console's. */
  families(options?: { bearer?: string }): Promise<Set<string>>;
  close(): Promise<void>;
}

/** Starts the LB; `h` is the test's console, whose metrics `families()` reads too. */
export async function startLiveExporters(h: Harness): Promise<LiveExporters> {
  const engine = await startEngineServer({ id: "e1", region: "us-ashburn", model: "m" });
  const lb = await startProxy({
    config: {
      schema: "meridian.lb-config/1",
      version: 1,
      lbId: "lb-1",
      region: "us-ashburn",
      replicas: [{ id: "e1", url: engine.url, region: "us-ashburn", model: "m", engine: "sglang" }],
    },
    settings: { port: 0, host: "127.0.0.1", metricsToken: LIVE_METRICS_TOKEN },
    logger: pino({ level: "silent" }),
  });
  return {
    lb,
    async families(options = {}) {
      const scrape = await request(`${lb.url}/metrics`, { headers: options.bearer ? { authorization: `Bearer ${options.bearer}` } : {} });
      assert.equal(scrape.statusCode, 200);
      return new Set([...metricFamilies(await scrape.body.text()), ...metricFamilies((await h.rt.metrics.render()).text)]);
    },
    async close() {
      await lb.close();
      await engine.close();
    },
  };
}
