import { test } from "node:test";
import assert from "node:assert/strict";
import { DEFAULT_WEIGHTS, MAX_COST_WEIGHT, MAX_INDEX_CAPACITY_BLOCKS, PrefixIndex } from "@meridian/routing";
import {
  DEFAULT_INDEX,
  DEFAULT_LIMITS,
  DEFAULT_PROBES,
  LB_CONFIG_SCHEMA,
  LimitsSchema,
  MAX_TIMER_MS,
  ProbesSchema,
  ProtocolError,
  parseLbConfig,
  safeParseLbConfig,
} from "./index";

const minimal = { schema: LB_CONFIG_SCHEMA, version: 0, lbId: "lb-ash", region: "us-ashburn" };

const full = {
  schema: LB_CONFIG_SCHEMA,
  version: 7,
  lbId: "lb-ash",
  region: "us-ashburn",
  policy: "skylb",
  weights: { rtt: 0.276, queue: 0.5 },
  crossRegion: "via-peer",
  sessionKeyBlocks: 2,
  replicas: [
    { id: "r-ash", url: "http://10.0.0.1:30000", region: "us-ashburn", model: "qwen", engine: "sglang", state: "enabled", maxConcurrency: 64 },
    { id: "r-fra", url: "https://fra.example.com/", region: "eu-frankfurt", model: "qwen", engine: "vllm", state: "draining" },
  ],
  peers: [{ id: "lb-fra", url: "http://lb-fra:8080", region: "eu-frankfurt", credentialHashes: ["a".repeat(64)] }],
  limits: { ...DEFAULT_LIMITS, queueMaxLength: 10 },
  probes: { ...DEFAULT_PROBES, rttIntervalMs: 30_000 },
  index: { ...DEFAULT_INDEX, capacityBlocks: 5000 },
  clientAuth: { required: true, keys: [{ id: "0123456789ab", name: "replay", region: "us-ashburn", sha256: "b".repeat(64) }] },
};

function messageOf(input: unknown): string {
  const result = safeParseLbConfig(input);
  assert.equal(result.success, false, "expected the config to be rejected");
  if (result.success) throw new Error("unreachable");
  assert.ok(result.error instanceof ProtocolError);
  return result.error.message;
}

test("a minimal config parses and gets the documented defaults", () => {
  const config = parseLbConfig(minimal);
  assert.equal(config.policy, "gorgo");
  assert.deepEqual(config.weights, DEFAULT_WEIGHTS);
  assert.equal(config.crossRegion, "direct");
  assert.deepEqual(config.replicas, []);
  assert.deepEqual(config.peers, []);
  assert.deepEqual(config.limits, DEFAULT_LIMITS);
  assert.equal(config.limits.peerQueueTau, 4);
  assert.equal(config.probes.rttIntervalMs, 5000);
  assert.deepEqual(config.index, DEFAULT_INDEX);
  assert.ok(config.sessionKeyBlocks >= 1);
});

test("defaults are fresh objects, so mutating one parsed config does not leak into the next", () => {
  const first = parseLbConfig(minimal);
  first.weights.rtt = 1.9;
  first.replicas.push({ id: "x", url: "http://x", region: "r", model: "m", engine: "vllm", state: "enabled" });
  const second = parseLbConfig(minimal);
  assert.equal(second.weights.rtt, DEFAULT_WEIGHTS.rtt);
  assert.deepEqual(second.replicas, []);
});

test("partial nested objects keep their other defaults; replica engine and state default", () => {
  const config = parseLbConfig({
    ...minimal,
    limits: { queueMaxLength: 3 },
    replicas: [{ id: "r1", url: "http://r1:8000", region: "us-ashburn", model: "m" }],
  });
  assert.equal(config.limits.queueMaxLength, 3);
  assert.equal(config.limits.queueMaxWaitMs, DEFAULT_LIMITS.queueMaxWaitMs);
  assert.equal(config.replicas[0]?.engine, "sglang");
  assert.equal(config.replicas[0]?.state, "enabled");
  assert.equal(config.replicas[0]?.maxConcurrency, undefined);
});

test("a full config survives a JSON round trip unchanged", () => {
  const config = parseLbConfig(full);
  assert.deepEqual(parseLbConfig(JSON.parse(JSON.stringify(config))), config);
  assert.deepEqual(config, full);
});

test("an unknown schema version is reported as such, and only that", () => {
  const message = messageOf({ ...full, schema: "meridian.lb-config/9", weights: "nonsense" });
  assert.match(message, /^lbConfig\.schema: unknown version "meridian\.lb-config\/9"/);
  assert.doesNotMatch(message, /weights/);
});

test("a missing or foreign schema tag is named", () => {
  assert.match(messageOf({ version: 0, lbId: "a", region: "b" }), /lbConfig\.schema: missing schema tag/);
  assert.match(messageOf({ ...minimal, schema: "meridian.lb-state/1" }), /lbConfig\.schema: expected "meridian\.lb-config\/2"/);
});

test("a version-1 config is still read, as version 2 with the new limits at their defaults", () => {
  const { maxPromptTokens: _a, maxJsonDepth: _b, clientBodyTimeoutMs: _c, firstByteMinMs: _d, ...v1Limits } = full.limits;
  const config = parseLbConfig({ ...full, schema: "meridian.lb-config/1", limits: v1Limits });
  assert.equal(config.schema, LB_CONFIG_SCHEMA);
  assert.deepEqual(config, {
    ...full,
    limits: { ...v1Limits, maxPromptTokens: 131_072, maxJsonDepth: 64, clientBodyTimeoutMs: 30_000, firstByteMinMs: 2_000 },
  });
  assert.match(
    messageOf({ ...full, schema: "meridian.lb-config/3" }),
    /unknown version "meridian\.lb-config\/3" \(this build reads "meridian\.lb-config\/2", "meridian\.lb-config\/1"\)/,
  );
});

test("the request limits of version 2 are positive integers, named when wrong", () => {
  assert.match(messageOf({ ...minimal, limits: { maxPromptTokens: 0 } }), /lbConfig\.limits\.maxPromptTokens: /);
  assert.match(messageOf({ ...minimal, limits: { maxJsonDepth: 1.5 } }), /lbConfig\.limits\.maxJsonDepth: /);
  assert.match(messageOf({ ...minimal, limits: { clientBodyTimeoutMs: -1 } }), /lbConfig\.limits\.clientBodyTimeoutMs: /);
  assert.match(messageOf({ ...minimal, limits: { firstByteMinMs: "2s" } }), /lbConfig\.limits\.firstByteMinMs: /);
});

test("every millisecond limit and probe interval is at most what a Node timer holds (2^31 - 1)", () => {
  assert.equal(MAX_TIMER_MS, 2 ** 31 - 1);
  const fields = [
    ...Object.keys(LimitsSchema.shape).map((name) => ["limits", name] as const),
    ...Object.keys(ProbesSchema.shape).map((name) => ["probes", name] as const),
  ].filter(([, name]) => name.endsWith("Ms"));
  assert.equal(fields.length, 8);
  for (const [group, name] of fields) {
    // A larger value would fire after 1 ms (TimeoutOverflowWarning): the opposite of what it says.
    assert.match(
      messageOf({ ...minimal, [group]: { [name]: 2 ** 31 } }),
      new RegExp(`^lbConfig\\.${group}\\.${name}: must be at most 2147483647 ms .*Node timers`),
    );
    assert.match(messageOf({ ...minimal, [group]: { [name]: Number.MAX_SAFE_INTEGER } }), new RegExp(`lbConfig\\.${group}\\.${name}: must be at most`));
    const config = parseLbConfig({ ...minimal, [group]: { [name]: MAX_TIMER_MS } });
    assert.equal((config[group] as Record<string, number>)[name], MAX_TIMER_MS);
  }
  // Waiting 0 ms in the queue still means "do not hold".
  assert.equal(parseLbConfig({ ...minimal, limits: { queueMaxWaitMs: 0 } }).limits.queueMaxWaitMs, 0);
});

test("NaN, infinite, zero and negative weights name the field", () => {
  assert.equal(messageOf({ ...minimal, weights: { rtt: Number.NaN, queue: 0.1 } }), "lbConfig.weights.rtt: expected number, received NaN");
  assert.match(messageOf({ ...minimal, weights: { rtt: 0.5, queue: Infinity } }), /lbConfig\.weights\.queue: expected number, received Infinity/);
  assert.match(messageOf({ ...minimal, weights: { rtt: 0, queue: 0.1 } }), /lbConfig\.weights\.rtt: /);
  assert.match(messageOf({ ...minimal, weights: { rtt: 0.5, queue: -1 } }), /lbConfig\.weights\.queue: /);
});

test("weights above 1e6 are refused, naming the field, so no score can overflow to Infinity", () => {
  assert.match(messageOf({ ...minimal, weights: { rtt: 1e307, queue: 0.1 } }), /^lbConfig\.weights\.rtt: must be at most 1000000/);
  assert.match(messageOf({ ...minimal, weights: { rtt: 0.5, queue: MAX_COST_WEIGHT * 2 } }), /^lbConfig\.weights\.queue: must be at most/);
  const trial = { id: "t", salt: "s", share: 0.5, candidate: { rtt: 1e9, queue: 0.1 } };
  assert.match(messageOf({ ...minimal, trial }), /^lbConfig\.trial\.candidate\.rtt: must be at most/);
  // Manual weights beyond the tuner's search bounds (rtt 100, queue 10) are still the operator's call.
  assert.deepEqual(parseLbConfig({ ...minimal, weights: { rtt: 500, queue: MAX_COST_WEIGHT } }).weights, { rtt: 500, queue: MAX_COST_WEIGHT });
});

test("index.capacityBlocks accepts exactly what the prefix index can be built with", () => {
  assert.equal(MAX_INDEX_CAPACITY_BLOCKS, 2 ** 31 - 1);
  assert.match(messageOf({ ...minimal, index: { capacityBlocks: 2 ** 31 } }), /^lbConfig\.index\.capacityBlocks: must be at most 2147483647/);
  assert.match(messageOf({ ...minimal, index: { capacityBlocks: 2 ** 40 } }), /lbConfig\.index\.capacityBlocks/);
  // Every accepted value builds an index (it allocates lazily), and one past the limit does not.
  const largest = parseLbConfig({ ...minimal, index: { capacityBlocks: MAX_INDEX_CAPACITY_BLOCKS } }).index;
  assert.equal(new PrefixIndex(largest).capacityBlocks, MAX_INDEX_CAPACITY_BLOCKS);
  assert.throws(() => new PrefixIndex({ ...largest, capacityBlocks: MAX_INDEX_CAPACITY_BLOCKS + 1 }), /capacityBlocks/);
  // ttlMs: any positive integer the schema takes is a valid index TTL.
  const longest = parseLbConfig({ ...minimal, index: { ttlMs: Number.MAX_SAFE_INTEGER } }).index;
  assert.equal(new PrefixIndex(longest).ttlMs, Number.MAX_SAFE_INTEGER);
  assert.match(messageOf({ ...minimal, index: { ttlMs: 0 } }), /lbConfig\.index\.ttlMs/);
});

test("a bad replica url names the replica index and field", () => {
  const replica = { id: "r1", url: "ftp://r1", region: "us", model: "m" };
  assert.match(messageOf({ ...minimal, replicas: [replica] }), /lbConfig\.replicas\[0\]\.url: expected an http or https URL/);
  assert.match(messageOf({ ...minimal, replicas: [{ ...replica, url: "not a url" }] }), /lbConfig\.replicas\[0\]\.url/);
});

test("an unknown policy, engine or replica state names the field", () => {
  assert.match(messageOf({ ...minimal, policy: "fastest" }), /^lbConfig\.policy: expected one of "gorgo"\|/);
  const replica = { id: "r1", url: "http://r1", region: "us", model: "m" };
  assert.match(messageOf({ ...minimal, replicas: [{ ...replica, engine: "tgi" }] }), /lbConfig\.replicas\[0\]\.engine/);
  assert.match(messageOf({ ...minimal, replicas: [{ ...replica, state: "paused" }] }), /lbConfig\.replicas\[0\]\.state/);
  assert.match(messageOf({ ...minimal, crossRegion: "tunnel" }), /lbConfig\.crossRegion/);
});

test("version must be a non-negative integer", () => {
  assert.match(messageOf({ ...minimal, version: -1 }), /lbConfig\.version/);
  assert.match(messageOf({ ...minimal, version: 1.5 }), /lbConfig\.version: expected int/);
});

test("typos in field names are rejected rather than silently defaulted", () => {
  assert.equal(messageOf({ ...minimal, weigths: { rtt: 1, queue: 0.1 } }), "lbConfig.weigths: unknown field");
  assert.equal(messageOf({ ...minimal, limits: { queueMaxLen: 3 } }), "lbConfig.limits.queueMaxLen: unknown field");
});

test("duplicate replica ids, duplicate peers and self-peering are rejected", () => {
  const replica = { id: "r1", url: "http://r1", region: "us", model: "m" };
  assert.match(messageOf({ ...minimal, replicas: [replica, replica] }), /lbConfig\.replicas\[1\]\.id: duplicate replica id "r1"/);
  const peer = { id: "lb-fra", url: "http://fra", region: "eu" };
  assert.match(messageOf({ ...minimal, peers: [peer, peer] }), /lbConfig\.peers\[1\]\.id: duplicate peer id/);
  assert.match(messageOf({ ...minimal, peers: [{ ...peer, id: "lb-ash" }] }), /lbConfig\.peers\[0\]\.id: an LB cannot be its own peer/);
});

test("non-objects are rejected with the root named", () => {
  assert.match(messageOf(null), /^lbConfig: expected object, received null/);
  assert.throws(() => parseLbConfig("{}"), ProtocolError);
});

test("ProtocolError lists issues with paths for programmatic use", () => {
  const result = safeParseLbConfig({ ...minimal, version: -1, region: "" });
  assert.equal(result.success, false);
  if (result.success) return;
  assert.deepEqual(result.error.issues.map((issue) => issue.path).sort(), ["lbConfig.region", "lbConfig.version"]);
});

test("a replica's cache capacity override is optional, a non-negative integer of tokens", () => {
  const replica = { id: "r1", url: "http://r1:8000", region: "us-ashburn", model: "m" };
  assert.equal(parseLbConfig({ ...minimal, replicas: [replica] }).replicas[0]?.cacheCapacityTokens, undefined);
  assert.equal(parseLbConfig({ ...minimal, replicas: [{ ...replica, cacheCapacityTokens: 442_000 }] }).replicas[0]?.cacheCapacityTokens, 442_000);
  assert.equal(parseLbConfig({ ...minimal, replicas: [{ ...replica, cacheCapacityTokens: 0 }] }).replicas[0]?.cacheCapacityTokens, 0);
  assert.match(messageOf({ ...minimal, replicas: [{ ...replica, cacheCapacityTokens: -1 }] }), /replicas\[0\]\.cacheCapacityTokens/);
  assert.match(messageOf({ ...minimal, replicas: [{ ...replica, cacheCapacityTokens: 1.5 }] }), /cacheCapacityTokens/);
});

test("a tuner trial travels in the config; a bad one names its field, and an LB without trials refuses rather than ignores it", () => {
  const trial = { id: "3-0a1b2c3d", salt: "0a1b2c3d", share: 0.5, candidate: { rtt: 20, queue: 0.2 } };
  assert.deepEqual(parseLbConfig({ ...minimal, trial }).trial, trial);
  assert.equal(parseLbConfig(minimal).trial, undefined, "no trial unless the console sends one");
  assert.match(messageOf({ ...minimal, trial: { ...trial, share: 1 } }), /lbConfig\.trial\.share: must be < 1/);
  assert.match(messageOf({ ...minimal, trial: { ...trial, share: 0 } }), /lbConfig\.trial\.share: must be > 0/);
  assert.match(messageOf({ ...minimal, trial: { ...trial, salt: "" } }), /lbConfig\.trial\.salt/);
  assert.match(messageOf({ ...minimal, trial: { ...trial, candidate: { rtt: 20 } } }), /lbConfig\.trial\.candidate\.queue/);
  assert.match(messageOf({ ...minimal, trial: { ...trial, arms: 3 } }), /lbConfig\.trial/, "strict: an unknown key is an error");
});

test("ids and regions travel in HTTP headers: only visible ASCII, named when not", () => {
  const replica = { id: "us-1", url: "http://127.0.0.1:8001", region: "us-ashburn", model: "m" };
  assert.equal(parseLbConfig({ ...minimal, replicas: [replica] }).replicas[0]?.id, "us-1");
  assert.match(messageOf({ ...minimal, lbId: "lb-東京" }), /lbConfig\.lbId: must be visible ASCII without spaces/);
  assert.match(messageOf({ ...minimal, region: "us ashburn" }), /lbConfig\.region: must be visible ASCII/);
  assert.match(messageOf({ ...minimal, replicas: [{ ...replica, id: "レプリカ-1" }] }), /lbConfig\.replicas\[0\]\.id: must be visible ASCII/);
  assert.match(
    messageOf({ ...minimal, peers: [{ id: "lb-eu", url: "http://127.0.0.1:9", region: "eu\tfra" }] }),
    /lbConfig\.peers\[0\]\.region: must be visible ASCII/,
  );
});
