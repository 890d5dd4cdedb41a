import { strict as assert } from "node:assert";
import { test } from "node:test";
import type { TelemetryEvent } from "@meridian/protocol";
import { telemetryEvent } from "../testing/telemetry-event";
import { percentile } from "@meridian/tuner";
import { RollingStats } from "./rolling-stats";

let seq = 0;
function event(time: number, partial: Partial<TelemetryEvent> = {}): TelemetryEvent {
  seq += 1;
  return telemetryEvent({
    seq,
    time,
    lbId: "lb",
    region: "r",
    replicaId: "a",
    predictedCachedTokens: 40,
    actualCachedTokens: 50,
    e2eMs: 200,
    outputTokens: 5,
    ...partial,
  });
}

test("percentile uses the nearest rank", () => {
  assert.equal(percentile([], 0.5), null);
  assert.equal(percentile([1, 2, 3, 4], 0.5), 2);
  assert.equal(
    percentile(
      [...Array(100).keys()].map((i) => i + 1),
      0.95,
    ),
    95,
  );
});

test("series, rates, shares and accuracy over time buckets", () => {
  const stats = new RollingStats(5_000, 12);
  const now = 99_500;
  for (let i = 0; i < 10; i += 1) stats.add(event(now - 4_000 + i, { ttftMs: (i + 1) * 10, replicaId: i < 7 ? "a" : "b" }), now);
  stats.add(event(now - 1, { status: 500, error: "boom", ttftMs: null, replicaId: null }), now);
  stats.add(event(now - 20_000, { ttftMs: 999 }), now);
  stats.add(event(now - 120_000), now); // older than the 60 s the stats keep: ignored

  const ttft = stats.ttftSeries(now, 60_000);
  assert.equal(ttft.length, 12);
  const last = ttft.at(-1)!;
  assert.equal(last.p50, 50);
  assert.equal(last.p95, 100);
  assert.equal(ttft.find((p) => p.t === 75_000)?.p95, 999);
  assert.equal(ttft[0]!.p50, null, "gaps are filled");

  assert.equal(stats.errorRate(now), 1 / 12);
  // 11 requests in the bucket that began 4.5 s ago.
  assert.ok(Math.abs(stats.rps(now, 10_000) - 11 / 4.5) < 1e-9);
  const shares = stats.replicaStats(now, 10_000);
  assert.equal(shares.get("a")?.share, 0.7);
  assert.equal(shares.get("b")?.share, 0.3);
  assert.equal(shares.get("a")?.cacheHitRate, 0.5);
  assert.ok(Math.abs(shares.get("a")!.predictionAccuracy! - 0.9) < 1e-9);
  const history = stats.shareSeries(now, 10_000);
  assert.deepEqual(history.at(-1)?.shares, { a: 0.7, b: 0.3 });
  assert.equal(stats.requestSeries(now, 10_000).at(-1)?.errors, 1);
  const live = stats.summary(now, 60_000);
  assert.equal(live.requests, 12);
  assert.equal(live.ttftMs.p99, 999);
  assert.deepEqual(Object.keys(live.replicaShare).sort(), ["a", "b"]);
});

test("events from an LB clock ahead of the console land in the current bucket", () => {
  const stats = new RollingStats(1_000, 5);
  stats.add(event(10_500), 10_000);
  // The bucket has just begun: its rate is taken over at least one second.
  assert.equal(stats.requestSeries(10_000, 5_000).at(-1)?.rps, 1);
});
