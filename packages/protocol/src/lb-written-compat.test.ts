// Objects an LB writes, as a newer LB would write them (a field this build does not know, an enum
// value it has not heard of), read by this build: the unknown is dropped, never the whole object.
// LBs are upgraded before the console (docs/ARCHITECTURE.md), so a console must read a newer LB.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  LB_STATE_SCHEMA,
  LB_PROOF_SCHEMA,
  LB_CREDENTIALS_STATUS_SCHEMA,
  TELEMETRY_EVENT_SCHEMA,
  safeParseLbState,
  safeParseLbProof,
  safeParseLbCredentialsStatus,
  safeParseTelemetryStreamLine,
  safeParseTelemetryEvent,
} from "./index";

const cache = {
  accuracy: 0.9,
  windowMs: 300_000,
  reports: 1,
  unreported: 0,
  cachedTokensReported: true,
  predictedTokens: 1,
  actualTokens: 1,
  capacityTokens: 1000,
  capacitySource: "metrics",
  budgetBlocks: 10,
  horizonMs: 1000,
  routes: 1,
  clears: 1,
  lastClearAt: 1,
  lastClearReason: "cache-lost",
};
const state = {
  schema: LB_STATE_SCHEMA,
  lbId: "lb-a",
  region: "r1",
  configVersion: 4,
  policy: "gorgo",
  weights: { rtt: 0.5, queue: 0.1 },
  trial: { id: "t1", salt: "s", share: 0.5, candidate: { rtt: 1, queue: 0.2 } },
  crossRegion: "direct",
  startedAt: 1,
  replicas: [
    {
      id: "r",
      url: "http://x",
      region: "r1",
      model: "m",
      state: "enabled",
      healthy: true,
      rttMs: 1,
      inFlight: 0,
      queuedTokens: 0,
      peerQueuedTokens: 0,
      full: false,
      share: 0,
      requests: 0,
      cacheHitRate: null,
      predictionAccuracy: null,
      scrape: { ok: true, ageMs: 1, error: null, running: 0, waiting: 0, usedTokens: 0 },
      cache,
    },
  ],
  queue: { length: 0, maxLength: 1, oldestWaitMs: 0 },
  index: { routes: 0, blocks: 0, evictions: 0, hits: 0, lookups: 0 },
  totals: { requests: 0, errors: 0, forwarded: 0, queued: 0 },
  telemetry: { lastSeq: 0, bufferSize: 1 },
  peers: [],
};

test("today's LbState parses, and a newer LB's extra top-level field is dropped", () => {
  assert.equal(safeParseLbState(state).success, true);
  assert.equal(safeParseLbState({ ...state, somethingNew: 1 }).success, true);
});

test("LbState: a newer LB's extra field inside trial.candidate is dropped, not the state", () => {
  const r = safeParseLbState({ ...state, trial: { ...state.trial, candidate: { rtt: 1, queue: 0.2, cache: 0.3 } } });
  assert.equal(r.success, true, r.success ? "" : r.error.message);
});

test("LbState: a newer LB's extra field in weights is dropped, not the state", () => {
  const r = safeParseLbState({ ...state, weights: { rtt: 0.5, queue: 0.1, cache: 0.3 } });
  assert.equal(r.success, true, r.success ? "" : r.error.message);
});

test("LbState: an index clear reason of another build ('zero-cached-run', renamed 'cache-lost' in 3e38251) reads as unknown, not a refused state", () => {
  const r = safeParseLbState({ ...state, replicas: [{ ...state.replicas[0], cache: { ...cache, lastClearReason: "zero-cached-run" } }] });
  assert.equal(r.success, true, r.success ? "" : r.error.message);
  assert.equal(r.success && r.data.replicas[0]?.cache.lastClearReason, null);
});

const proof = {
  schema: LB_PROOF_SCHEMA,
  lbId: "lb-a",
  nonce: "A".repeat(43),
  proofs: [{ keyId: "0123456789abcdef", mac: "B".repeat(43) }],
};

test("LbProof (LB -> console, machine-written): a newer LB's extra field is dropped: the console still checks the proof", () => {
  assert.equal(safeParseLbProof(proof).success, true);
  const top = safeParseLbProof({ ...proof, build: "1.2.3" });
  assert.equal(top.success, true, top.success ? "" : top.error.message);
  const inner = safeParseLbProof({ ...proof, proofs: [{ ...proof.proofs[0], since: 1 }] });
  assert.equal(inner.success, true, inner.success ? "" : inner.error.message);
});

test("LbCredentialsStatus (LB -> console, machine-written): a newer LB's extra field is dropped", () => {
  const status = { schema: LB_CREDENTIALS_STATUS_SCHEMA, lbId: "lb-a", keyIds: ["0123456789abcdef"] };
  assert.equal(safeParseLbCredentialsStatus(status).success, true);
  const r = safeParseLbCredentialsStatus({ ...status, retired: ["fedcba9876543210"] });
  assert.equal(r.success, true, r.success ? "" : r.error.message);
});

const event = {
  schema: TELEMETRY_EVENT_SCHEMA,
  seq: 1,
  time: 1,
  lbId: "lb-a",
  region: "r1",
  replicaId: "r",
  configVersion: 1,
  policy: "gorgo",
  weights: { rtt: 1, queue: 1 },
  inputTokens: 1,
  predictedCachedTokens: 0,
  actualCachedTokens: null,
  ttftMs: 1,
  e2eMs: 2,
  outputTokens: 1,
  status: 200,
  error: null,
  forwarded: false,
  hop: 0,
};

test("TelemetryEvent: an extra field inside weights is dropped, the event kept (the tuner keeps the sample)", () => {
  assert.equal(safeParseTelemetryEvent({ ...event, extra: 1 }).success, true, "top-level extras are dropped");
  const r = safeParseTelemetryEvent({ ...event, weights: { rtt: 1, queue: 1, cache: 1 } });
  assert.equal(r.success, true, r.success ? "" : r.error.message);
});

test("a telemetry 'dropped' line with a newer LB's extra field is read, its count kept", () => {
  const line = { type: "dropped", fromSeq: 1, toSeq: 5, count: 5 };
  assert.equal(safeParseTelemetryStreamLine(line).success, true);
  const r = safeParseTelemetryStreamLine({ ...line, boot: "abc" });
  assert.equal(r.success, true, r.success ? "" : r.error.message);
});
