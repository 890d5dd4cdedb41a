// A live LB (a meridian-proxy in front of one simulated engine) and a console, for the tests that hold
// the shipped ops files (the Grafana dashboard, the Prometheus alert rules) to the series the two
// processes really export.
import "server-only";
import assert from "node:assert/strict";
import pino from "pino";
import { request } from "undici";
import { startProxy, type RunningProxy } from "@meridian/proxy";
import { metricFamilies } from "@meridian/proxy/testing";
import { startEngineServer } from "@meridian/sim";
import { createHarness, type Harness } from "./harness";

/** The LB's metrics token (MERIDIAN_LB_METRICS_TOKEN): a scrape that presents it reads the client series. */
export const LIVE_METRICS_TOKEN = "ops-files-scrape-token";

export interface LiveExporters {
  lb: RunningProxy;
  h: Harness;
  /** The metric families of the LB's `GET /metrics` (with `bearer`: as a scrape presenting it reads
   * them) and of the console's. */
  families(options?: { bearer?: string }): Promise<Set<string>>;
  close(): Promise<void>;
}

export async function startLiveExporters(): Promise<LiveExporters> {
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
  const h = await createHarness();
  return {
    lb,
    h,
    async families(options = {}) {
      const scrape = await request(`${lb.url}/metrics`, { headers: options.bearer ? { authorization: `Bearer ${options.bearer}` } : {} });
      assert.equal(scrape.statusCode, 200);
      return new Set([...metricFamilies(await scrape.body.text()), ...metricFamilies((await h.rt.metrics.render()).text)]);
    },
    async close() {
      await h.close();
      await lb.close();
      await engine.close();
    },
  };
}
