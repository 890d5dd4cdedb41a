// GET /metrics must pass `promtool check metrics` (Prometheus' own linter), checked on live output
// after real traffic so that every labelled series and histogram exists, including the extended
// series: Node process metrics, build and config info, replica state. promtool is a system tool
// (Debian: `apt-get install prometheus`, which .ci/run does); without it the test skips, except in
// CI, where it fails (src/testing.ts).
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { request } from "undici";
import type { RunningProxy } from "../src/index";
import { havePromtool, metricFamilies, promtoolFindings } from "../src/testing";
import { adminPutConfig, chatBody, lbConfig, post, startEngine, startLb, type Engine } from "./helpers";

let engines: Engine[];
let lb: RunningProxy;

before(async () => {
  engines = [await startEngine("us-1", "us-ashburn"), await startEngine("us-2", "us-ashburn")];
  lb = await startLb(lbConfig("lb-us", "us-ashburn", engines));
});
after(async () => {
  await lb?.close();
  for (const engine of engines ?? []) await engine.close();
});

async function scrape(): Promise<string> {
  const response = await request(`${lb.url}/metrics`);
  assert.equal(response.statusCode, 200);
  return response.body.text();
}

test("GET /metrics carries process, build, config and replica-state series beside the LB's own", async () => {
  const config = lbConfig("lb-us", "us-ashburn", engines, { version: 2, policy: "least-load" });
  config.replicas = (config.replicas ?? []).map((r) => (r.id === "us-2" ? { ...r, state: "draining" as const } : r));
  await adminPutConfig(lb, config);
  const text = await scrape();
  const families = metricFamilies(text);
  for (const name of ["process_cpu_seconds_total", "process_resident_memory_bytes", "nodejs_eventloop_lag_seconds", "nodejs_heap_size_used_bytes"]) {
    assert.ok(families.has(name), `${name} exported`);
  }
  assert.match(text, /^meridian_lb_build_info\{version="\d+\.\d+\.\d+",nodejs="v\d+[^"]*"\} 1$/m);
  assert.match(text, /^meridian_lb_config_info\{lb="lb-us",region="us-ashburn",policy="least-load",cross_region="direct"\} 1$/m);
  assert.match(text, /^meridian_lb_config_version 2$/m);
  assert.match(text, /^meridian_lb_replica_state\{replica="us-2",state="draining"\} 1$/m);
  assert.match(text, /^meridian_lb_replica_state\{replica="us-2",state="enabled"\} 0$/m);
  assert.match(text, /^meridian_lb_replica_state\{replica="us-1",state="enabled"\} 1$/m);
  assert.match(text, /^meridian_lb_replica_healthy\{replica="us-2"\} 1$/m, "draining, and still healthy");
  await adminPutConfig(lb, lbConfig("lb-us", "us-ashburn", engines, { version: 3 }));
});

test("GET /metrics passes promtool check metrics after traffic", async (t) => {
  if (!havePromtool(t)) return;
  // Streamed and not, plus an error, so counters, both histograms and the rejected series all exist.
  assert.equal((await post(`${lb.url}/v1/chat/completions`, chatBody("hello there"))).status, 200);
  assert.equal((await post(`${lb.url}/v1/chat/completions`, chatBody("stream please", { stream: true }))).status, 200);
  assert.equal((await post(`${lb.url}/v1/chat/completions`, "{not json")).status, 400);
  const text = await scrape();
  assert.match(text, /meridian_lb_ttft_seconds_bucket/);
  assert.equal(promtoolFindings(text), "", "promtool reported lint findings");
});
