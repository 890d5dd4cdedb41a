// GET /metrics must pass `promtool check metrics` (Prometheus' own linter: naming, units, help text,
// counter suffixes), checked on live output after real traffic so that every labelled series and
// histogram exists. promtool is an optional system tool (Debian: `apt-get install prometheus`); where
// it is not on PATH the test is skipped, not failed, and says why.
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { after, before, test } from "node:test";
import { request } from "undici";
import type { RunningProxy } from "../src/index";
import { chatBody, lbConfig, post, startEngine, startLb, type Engine } from "./helpers";

function findPromtool(): string | null {
  const probe = spawnSync("promtool", ["--version"], { encoding: "utf8" });
  return probe.error ? null : "promtool";
}

const promtool = findPromtool();
let engine: Engine;
let lb: RunningProxy;

before(async () => {
  if (!promtool) return;
  engine = await startEngine("us-1", "us-ashburn");
  lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]));
});
after(async () => {
  await lb?.close();
  await engine?.close();
});

test("GET /metrics passes promtool check metrics after traffic", async (t) => {
  if (!promtool) {
    t.skip("promtool is not on PATH (install Prometheus, e.g. `apt-get install prometheus`, to run this check)");
    return;
  }
  // Streamed and not, plus an error, so counters, both histograms and the rejected series all exist.
  assert.equal((await post(`${lb.url}/v1/chat/completions`, chatBody("hello there"))).status, 200);
  assert.equal((await post(`${lb.url}/v1/chat/completions`, chatBody("stream please", { stream: true }))).status, 200);
  assert.equal((await post(`${lb.url}/v1/chat/completions`, "{not json")).status, 400);
  const response = await request(`${lb.url}/metrics`);
  const text = await response.body.text();
  assert.equal(response.statusCode, 200);
  assert.match(text, /meridian_lb_ttft_seconds_bucket/);
  const check = spawnSync(promtool, ["check", "metrics"], { input: text, encoding: "utf8" });
  assert.equal(check.error, undefined);
  // promtool prints lint problems on stdout/stderr and exits non-zero on any of them.
  assert.equal(check.status, 0, `promtool check metrics failed:\n${check.stdout}${check.stderr}`);
  assert.equal(`${check.stdout}${check.stderr}`.trim(), "", "promtool reported lint findings");
});
