// A replica's cache hit rate divides cached tokens by
// the prompts' tokens in one unit: LBs now send actualCachedTokens in the units of inputTokens, capped
// at it; an event from an older LB, in the engine's units, must not show more than 100 %.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { telemetryEvent } from "../testing/telemetry-event";
import { RollingStats } from "./rolling-stats";

const now = 1_000_000;
const event = (seq: number, inputTokens: number, predictedCachedTokens: number, actualCachedTokens: number) =>
  telemetryEvent({
    seq,
    time: now - 5_000,
    lbId: "lb",
    region: "r",
    replicaId: "a",
    inputTokens,
    predictedCachedTokens,
    actualCachedTokens,
    e2eMs: 200,
    outputTokens: 5,
  });

test("a replica's cache hit rate never exceeds 100 %, even from an LB that sent the engine's count", () => {
  const stats = new RollingStats();
  // The LB estimated 300 prompt tokens; the engine counted 400 and served 384 from cache (an older LB
  // sent that 384 as is).
  stats.add(event(1, 300, 288, 384), now);
  const replica = stats.replicaStats(now).get("a");
  assert.equal(replica?.cacheHitRate, 1, `replica cache hit rate ${((replica?.cacheHitRate ?? 0) * 100).toFixed(1)} %`);
  assert.equal(stats.cacheHitRate(now), 1);
  // Accuracy compares the prediction with the capped count: 288 of 300.
  assert.equal(replica?.predictionAccuracy, 288 / 300);
});

test("events in one unit are counted as sent", () => {
  const stats = new RollingStats();
  stats.add(event(1, 300, 240, 240), now);
  stats.add(event(2, 100, 0, 50), now);
  const replica = stats.replicaStats(now).get("a");
  assert.equal(replica?.cacheHitRate, 290 / 400);
  assert.equal(replica?.predictionAccuracy, 240 / 290);
});
