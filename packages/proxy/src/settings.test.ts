// The proxy's millisecond settings run on Node timers, which hold at most 2^31 - 1 ms and fire a
// longer delay after 1 ms: a huge value meant as "practically never" (a heartbeat, a poll interval, a
// drain deadline) would do the opposite, so it is refused at startup, naming the setting.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { MAX_TIMER_MS } from "@meridian/protocol";
import { readProxyEnv } from "./env";
import { parseProcessSettings, ProcessSettingsSchema } from "./settings";

test("every *Ms process setting is at most what a Node timer holds, and names itself when over", () => {
  const fields = Object.keys(ProcessSettingsSchema.shape).filter((name) => name.endsWith("Ms"));
  assert.deepEqual(fields.sort(), ["drainTimeoutMs", "peerPollIntervalMs", "telemetryHeartbeatMs", "warmupTimeoutMs"]);
  for (const name of fields) {
    assert.throws(() => parseProcessSettings({ [name]: 2 ** 31 }), new RegExp(`^ConfigError: proxy\\.${name}: must be at most 2147483647 ms .*Node timers`));
    assert.equal((parseProcessSettings({ [name]: MAX_TIMER_MS }) as unknown as Record<string, number>)[name], MAX_TIMER_MS);
  }
  // 0 keeps its meaning where it had one (no warm-up wait, cut at once on SIGTERM).
  assert.equal(parseProcessSettings({ warmupTimeoutMs: 0, drainTimeoutMs: 0 }).drainTimeoutMs, 0);
  assert.throws(() => parseProcessSettings({ peerPollIntervalMs: 0 }), /proxy\.peerPollIntervalMs/);
});

test("MERIDIAN_LB_DRAIN_TIMEOUT_MS is refused above 2^31 - 1 ms, naming the variable", () => {
  assert.equal(readProxyEnv({ MERIDIAN_LB_DRAIN_TIMEOUT_MS: String(MAX_TIMER_MS) }).MERIDIAN_LB_DRAIN_TIMEOUT_MS, MAX_TIMER_MS);
  assert.throws(() => readProxyEnv({ MERIDIAN_LB_DRAIN_TIMEOUT_MS: String(2 ** 31) }), /MERIDIAN_LB_DRAIN_TIMEOUT_MS: must be at most 2147483647 ms/);
  assert.throws(() => readProxyEnv({ MERIDIAN_LB_DRAIN_TIMEOUT_MS: "-1" }), /MERIDIAN_LB_DRAIN_TIMEOUT_MS/);
  assert.throws(() => readProxyEnv({ MERIDIAN_LB_DRAIN_TIMEOUT_MS: "soon" }), /MERIDIAN_LB_DRAIN_TIMEOUT_MS/);
});

test("an empty variable is an unset one: the config file's port and the default drain stand", () => {
  const env = readProxyEnv({ MERIDIAN_LB_PORT: "", MERIDIAN_LB_DRAIN_TIMEOUT_MS: " ", MERIDIAN_LB_HOST: "" });
  assert.equal(env.MERIDIAN_LB_PORT, undefined);
  assert.equal(env.MERIDIAN_LB_DRAIN_TIMEOUT_MS, undefined);
  assert.equal(env.MERIDIAN_LB_HOST, undefined);
  assert.equal(readProxyEnv({ MERIDIAN_LB_PORT: "4791" }).MERIDIAN_LB_PORT, 4791);
  // Only decimal digits are a port: Number() read hex and exponents as ports too.
  for (const odd of ["0x1F99", "1e4", "80.5", "+80", "65536"]) assert.throws(() => readProxyEnv({ MERIDIAN_LB_PORT: odd }), /MERIDIAN_LB_PORT/, odd);
});
