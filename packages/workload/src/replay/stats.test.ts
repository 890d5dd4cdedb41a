import { strict as assert } from "node:assert";
import { test } from "node:test";
import { type ReplayRecord, summarise } from "./stats";

const sent = (startMs: number, e2eMs: number): ReplayRecord => ({
  index: 0,
  region: "us",
  sessionId: "s",
  scheduledMs: startMs,
  scheduleLagMs: 0,
  queueWaitMs: 0,
  startMs,
  inputTokens: 10,
  maxTokens: 4,
  status: 200,
  ok: true,
  ttftMs: e2eMs / 2,
  e2eMs,
  contentDeltas: 4,
  outputTokens: 4,
});

test("durationS, and the throughput it divides, run from the first send, not from a wait before it", () => {
  // A trace window replayed with its timestamps kept: nothing is due before 400 ms, two requests then.
  const summary = summarise([sent(400, 10), sent(410, 10)], { toMs: 420 });
  assert.equal(summary.durationS, 0.02);
  assert.equal(summary.throughput.requestsPerS, 100);
});

test("with nothing sent, the duration is the run's whole span", () => {
  assert.equal(summarise([], { toMs: 250 }).durationS, 0.25);
});

test("a window given its span (the load generator's last records) is not stretched by a slow request finishing in it", () => {
  // In completion order, as the load generator keeps them: the slow one was sent long before the rest.
  const window = [sent(1000, 100), sent(10, 1100), sent(1010, 100)];
  const summary = summarise(window, { fromMs: 1000, toMs: 1110 });
  assert.equal(summary.durationS, 0.11);
});
