import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ProtocolError,
  TELEMETRY_EVENT_SCHEMA,
  formatTelemetryNdjsonLine,
  parseTelemetryEvent,
  parseTelemetryNdjsonLine,
  parseTelemetryStreamLine,
  safeParseTelemetryEvent,
  type TelemetryEvent,
} from "./index";

const event: TelemetryEvent = {
  schema: TELEMETRY_EVENT_SCHEMA,
  seq: 42,
  time: 1_763_700_000_000,
  lbId: "lb-ash",
  region: "us-ashburn",
  replicaId: "r-ash",
  configVersion: 3,
  policy: "gorgo",
  weights: { rtt: 0.5, queue: 0.1 },
  inputTokens: 2048,
  predictedCachedTokens: 1536,
  actualCachedTokens: 1500,
  ttftMs: 180.5,
  e2eMs: 2400,
  outputTokens: 128,
  status: 200,
  error: null,
  forwarded: false,
  hop: 0,
  sessionKey: "s-1",
  clientRegion: "us-ashburn",
};

test("a telemetry event round-trips through JSON", () => {
  assert.deepEqual(parseTelemetryEvent(JSON.parse(JSON.stringify(event))), event);
});

test("a request that reached no replica has null replica, ttft and cached tokens", () => {
  const failed = { ...event, replicaId: null, ttftMs: null, actualCachedTokens: null, status: 503, error: "queue full", outputTokens: 0 };
  const { weights: _weights, sessionKey: _sessionKey, clientRegion: _clientRegion, ...withoutOptional } = failed;
  assert.deepEqual(parseTelemetryEvent(withoutOptional), withoutOptional);
});

test("bad telemetry fields are named", () => {
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ seq: 0 }, /telemetryEvent\.seq/],
    [{ ttftMs: Number.NaN }, /telemetryEvent\.ttftMs: expected number, received NaN/],
    [{ status: 42 }, /telemetryEvent\.status/],
    [{ policy: "fastest" }, /telemetryEvent\.policy/],
    [{ configVersion: 1.5 }, /telemetryEvent\.configVersion/],
    [{ weights: { rtt: 0.5 } }, /telemetryEvent\.weights\.queue/],
    [{ forwarded: "no" }, /telemetryEvent\.forwarded/],
  ];
  for (const [patch, pattern] of cases) {
    const result = safeParseTelemetryEvent({ ...event, ...patch });
    assert.equal(result.success, false, JSON.stringify(patch));
    if (!result.success) assert.match(result.error.message, pattern);
  }
});

test("an event of an unknown schema version says so", () => {
  assert.throws(
    () => parseTelemetryEvent({ ...event, schema: "meridian.telemetry-event/2" }),
    /telemetryEvent\.schema: unknown version "meridian\.telemetry-event\/2"/,
  );
});

test("unknown extra fields on machine-written events are dropped, not fatal", () => {
  const parsed = parseTelemetryEvent({ ...event, itlMs: 12 });
  assert.equal("itlMs" in parsed, false);
});

test("stream lines: event, dropped notice and heartbeat all parse and round-trip as NDJSON", () => {
  const lines = [
    { type: "event" as const, event },
    { type: "dropped" as const, fromSeq: 10, toSeq: 19, count: 10 },
    { type: "heartbeat" as const, seq: 0, time: 5 },
  ];
  for (const line of lines) {
    const text = formatTelemetryNdjsonLine(line);
    assert.ok(text.endsWith("\n"));
    assert.equal(text.indexOf("\n"), text.length - 1, "one line per message");
    assert.deepEqual(parseTelemetryNdjsonLine(text.trimEnd()), line);
  }
  const parsed = parseTelemetryStreamLine(lines[1]);
  if (parsed.type === "dropped") assert.equal(parsed.count, 10);
  else assert.fail("expected a dropped line");
});

test("bad stream lines are named, including nested event fields", () => {
  assert.throws(() => parseTelemetryStreamLine({ type: "gap", fromSeq: 1 }), /telemetryLine\.type/);
  assert.throws(() => parseTelemetryStreamLine({ type: "dropped", fromSeq: 9, toSeq: 3, count: 1 }), /telemetryLine\.toSeq: must be >= fromSeq/);
  assert.throws(() => parseTelemetryStreamLine({ type: "event", event: { ...event, e2eMs: -1 } }), /telemetryLine\.event\.e2eMs/);
  assert.throws(
    () => parseTelemetryStreamLine({ type: "event", event: { ...event, schema: "meridian.telemetry-event/7" } }),
    /telemetryLine\.event\.schema: unknown version/,
  );
  assert.throws(
    () => parseTelemetryNdjsonLine("{not json"),
    (error: unknown) => {
      assert.ok(error instanceof ProtocolError);
      assert.match(error.message, /^telemetryLine: not valid JSON/);
      return true;
    },
  );
});

test("an event routed in a tuner trial carries the trial id, its arm and whether it was triggered", () => {
  const inTrial = { ...event, trialId: "3-0a1b2c3d", arm: "candidate" as const, triggered: true };
  assert.deepEqual(parseTelemetryEvent(JSON.parse(JSON.stringify(inTrial))), inTrial);
  const parsed = safeParseTelemetryEvent({ ...inTrial, arm: "treatment" });
  assert.equal(parsed.success, false);
  assert.match(String(parsed.success ? "" : parsed.error.message), /telemetryEvent\.arm/);
});
