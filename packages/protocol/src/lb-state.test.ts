import { test } from "node:test";
import assert from "node:assert/strict";
import { LB_STATE_SCHEMA, PEER_REPORT_SCHEMA, parseLbState, parsePeerReport, safeParseLbState, type LbState, type PeerReport } from "./index";

const state: LbState = {
  schema: LB_STATE_SCHEMA,
  lbId: "lb-ash",
  region: "us-ashburn",
  configVersion: 4,
  policy: "gorgo",
  weights: { rtt: 0.5, queue: 0.1 },
  crossRegion: "direct",
  startedAt: 1_763_700_000_000,
  replicas: [
    {
      id: "r-ash",
      url: "http://10.0.0.1:30000",
      region: "us-ashburn",
      model: "qwen",
      state: "enabled",
      healthy: true,
      rttMs: 37.2,
      inFlight: 3,
      queuedTokens: 6000,
      peerQueuedTokens: 1200,
      full: false,
      share: 0.6,
      requests: 600,
      cacheHitRate: 0.72,
      predictionAccuracy: null,
      scrape: { ok: true, ageMs: 400, error: null, running: 3, waiting: 0, usedTokens: 90_000 },
      cache: {
        accuracy: 0.93,
        windowMs: 300_000,
        reports: 120,
        unreported: 0,
        cachedTokensReported: true,
        predictedTokens: 400_000,
        actualTokens: 380_000,
        capacityTokens: 442_354,
        capacitySource: "metrics",
        budgetBlocks: 27_647,
        horizonMs: 140_000,
        routes: 27_000,
        clears: 1,
        lastClearAt: 1_763_700_100_000,
        lastClearReason: "cache-lost",
      },
    },
  ],
  queue: { length: 0, maxLength: 256, oldestWaitMs: 0 },
  index: { routes: 10, blocks: 5000, evictions: 0, hits: 40, lookups: 50 },
  totals: { requests: 1000, errors: 2, forwarded: 5, queued: 7 },
  telemetry: { lastSeq: 1000, bufferSize: 4096 },
  peers: [{ id: "lb-fra", region: "eu-frankfurt", healthy: true, queueLength: 0, availableReplicas: 2 }],
};

test("LB state round-trips through JSON", () => {
  assert.deepEqual(parseLbState(JSON.parse(JSON.stringify(state))), state);
});

test("bad LB state fields are named with their replica index", () => {
  const badShare = { ...state, replicas: [{ ...state.replicas[0], share: 1.5 }] };
  const result = safeParseLbState(badShare);
  assert.equal(result.success, false);
  if (!result.success) assert.match(result.error.message, /lbState\.replicas\[0\]\.share/);
  const badScrape = { ...state, replicas: [{ ...state.replicas[0], scrape: { ok: true } }] };
  assert.throws(() => parseLbState(badScrape), /lbState\.replicas\[0\]\.scrape\.ageMs/);
  assert.throws(() => parseLbState({ ...state, schema: "meridian.lb-state/2" }), /lbState\.schema: unknown version/);
});

const report: PeerReport = {
  schema: PEER_REPORT_SCHEMA,
  lbId: "lb-fra",
  region: "eu-frankfurt",
  time: 123,
  configVersion: 2,
  replicas: [{ id: "r-fra", inFlight: 2, inFlightTokens: 4096, pendingPrefillTokens: 1024, full: false }],
  queueLength: 1,
  availableReplicas: 1,
  snapshot: { keys: [1, 2 ** 53 - 1], truncated: false },
};

test("peer report round-trips, with and without a prefix snapshot", () => {
  assert.deepEqual(parsePeerReport(JSON.parse(JSON.stringify(report))), report);
  const { snapshot: _snapshot, ...withoutSnapshot } = report;
  assert.deepEqual(parsePeerReport(withoutSnapshot), withoutSnapshot);
});

test("a peer report from an LB that predates pendingPrefillTokens reads it as 0", () => {
  const { pendingPrefillTokens: _pending, ...older } = report.replicas[0]!;
  assert.equal(parsePeerReport({ ...report, replicas: [older] }).replicas[0]?.pendingPrefillTokens, 0);
  assert.throws(() => parsePeerReport({ ...report, replicas: [{ ...older, pendingPrefillTokens: -1 }] }), /peerReport\.replicas\[0\]\.pendingPrefillTokens/);
});

test("a peer report's availability by model is optional (older LBs send none) and counted", () => {
  const byModel = { ...report, availableByModel: { "model-a": 1, "model-b": 0 } };
  assert.deepEqual(parsePeerReport(JSON.parse(JSON.stringify(byModel))), byModel);
  assert.equal(parsePeerReport(report).availableByModel, undefined);
  assert.throws(() => parsePeerReport({ ...report, availableByModel: { "model-a": -1 } }), /peerReport\.availableByModel\.model-a/);
});

test("peer report rejects keys that are not exact block keys and names them", () => {
  assert.throws(() => parsePeerReport({ ...report, snapshot: { keys: [1, 0.5], truncated: false } }), /peerReport\.snapshot\.keys\[1\]/);
  assert.throws(() => parsePeerReport({ ...report, snapshot: { keys: [2 ** 53], truncated: false } }), /peerReport\.snapshot\.keys\[0\]/);
  assert.throws(() => parsePeerReport({ ...report, queueLength: -1 }), /peerReport\.queueLength/);
});

test("an LB state whose trial carries a field this console does not know is read, the field dropped", () => {
  const trial = { id: "7-abc", salt: "abc", share: 0.5, candidate: { rtt: 1, queue: 0.1 } };
  const parsed = safeParseLbState({ ...state, trial: { ...trial, phase: "warm" } });
  assert.equal(parsed.success, true);
  assert.deepEqual(parsed.success ? parsed.data.trial : null, trial);
  assert.equal(safeParseLbState({ ...state, trial: { ...trial, share: 2 } }).success, false, "a known field is still checked");
});
