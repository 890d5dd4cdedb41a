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
  // 11 requests in the bucket that began 4.5 s ago, none in the one before it (which began inside the
  // 10 s window, 9.5 s ago): traffic was seen 20 s ago, so the quiet 5 s count too.
  assert.ok(Math.abs(stats.rps(now, 10_000) - 11 / 9.5) < 1e-9);
  const shares = stats.replicaStats(now, 10_000);
  assert.equal(shares.get("a")?.share, 0.7);
  assert.equal(shares.get("b")?.share, 0.3);
  assert.equal(shares.get("a")?.cacheHitRate, 0.5);
  // Σmin/Σmax of predicted 40 vs reported 50 per request.
  assert.ok(Math.abs(shares.get("a")!.predictionAccuracy! - 0.8) < 1e-9);
  assert.deepEqual(stats.cacheSeries(now, 10_000).at(-1)?.replicas, { a: { predicted: 280, actual: 350 }, b: { predicted: 120, actual: 150 } });
  const history = stats.shareSeries(now, 10_000);
  assert.deepEqual(history.at(-1)?.shares, { a: 0.7, b: 0.3 });
  // One failure in the bucket that began 4.5 s ago: a rate, like rps.
  assert.ok(Math.abs(stats.requestSeries(now, 10_000).at(-1)!.errorsPerS - 1 / 4.5) < 1e-9);
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

test("requests and errors are both per second: 10 req/s with 10 % failing reads 10 and 1", () => {
  const stats = new RollingStats(5_000, 120);
  const t0 = 1_700_000_000_000;
  // One request every 100 ms for 60 s, every tenth one failing.
  for (let i = 0; i < 600; i += 1) {
    const time = t0 + i * 100;
    stats.add(event(time, i % 10 === 0 ? { status: 500, error: "boom", ttftMs: null } : {}), time);
  }
  const now = t0 + 60_000;
  // The 12 complete buckets of the minute, and the one beginning at `now`.
  const complete = stats.requestSeries(now, 65_000).slice(0, -1);
  assert.equal(complete.length, 12);
  for (const point of complete) {
    assert.ok(Math.abs(point.rps - 10) < 1e-9, `rps ${point.rps}`);
    assert.ok(Math.abs(point.errorsPerS - 1) < 1e-9, `errors/s ${point.errorsPerS}`);
  }
  assert.equal(stats.errorRate(now), 0.1);

  // A bucket still filling divides both by the time it covered so far: 2.5 s of the same traffic.
  for (let i = 600; i < 625; i += 1) {
    const time = t0 + i * 100;
    stats.add(event(time, i % 10 === 0 ? { status: 500, error: "boom", ttftMs: null } : {}), time);
  }
  const filling = stats.requestSeries(t0 + 62_500, 60_000).at(-1)!;
  assert.equal(filling.rps, 10);
  assert.equal(filling.errorsPerS, 1.2, "3 failures (i = 600, 610, 620) in 2.5 s");
});

test("the latest TTFT is the newest complete bucket that measured one, with its age", () => {
  const stats = new RollingStats(5_000, 120);
  assert.equal(stats.latestTtft(100_000), null, "nothing measured");
  for (let i = 0; i < 20; i += 1) stats.add(event(90_000 + i * 100, { ttftMs: (i + 1) * 10 }), 92_000);
  // The bucket still filling [95 s, 100 s) holds a single slow request: not the stat.
  stats.add(event(96_000, { ttftMs: 5_000 }), 96_000);
  const latest = stats.latestTtft(97_000);
  assert.deepEqual(latest, { t: 90_000, bucketMs: 5_000, ageMs: 2_000, recent: true, p50: 100, p95: 190 });

  // Once the bucket is complete it is the stat.
  assert.equal(stats.latestTtft(100_000)?.p95, 5_000);
  assert.equal(stats.latestTtft(100_000)?.ageMs, 0);

  // A bucket that measured nothing (only failures) is skipped, not shown as no data.
  stats.add(event(101_000, { status: 500, error: "boom", ttftMs: null }), 101_000);
  assert.equal(stats.latestTtft(106_000)?.t, 95_000);

  // Older than a minute: still returned with its age, but not recent.
  const old = stats.latestTtft(100_000 + 60_001);
  assert.equal(old?.t, 95_000);
  assert.equal(old?.ageMs, 60_001);
  assert.equal(old?.recent, false);
  assert.equal(stats.latestTtft(160_000)?.recent, true, "exactly a minute is still recent");
});

test("steady traffic reads its rate wherever the window's edge falls in a bucket, however long its requests run", () => {
  // 10 requests a second for a minute, each reported when it ends (as the LBs stream them); the
  // overview asks for the last 10 s at every point of a bucket.
  for (const e2eMs of [0, 3_000]) {
    for (const into of [100, 2_500, 4_900]) {
      const stats = new RollingStats(5_000, 120);
      const now = 1_000_000 + into;
      let seq = 0;
      for (let t = now - 60_000; t + e2eMs <= now; t += 100) stats.add(event(t, { seq: ++seq, e2eMs }), now);
      const rps = stats.rps(now, 10_000);
      assert.ok(Math.abs(rps - 10) < 0.5, `${e2eMs} ms requests, ${into} ms into a bucket: rps ${rps}, expected 10`);
    }
  }
  // Traffic that began 3 s ago is counted over those 3 s, not over the whole window.
  const fresh = new RollingStats(5_000, 120);
  for (let i = 0; i < 30; i += 1) fresh.add(event(1_000_000 + i * 100, { seq: i + 1, e2eMs: 0 }), 1_003_000);
  assert.ok(Math.abs(fresh.rps(1_003_000, 10_000) - 10) < 1e-9);
});

test("no request in the window: the error rate is unknown (the overview's dash), not 0 %", () => {
  const stats = new RollingStats(5_000, 120);
  const t0 = 1_700_000_000_000;
  assert.equal(stats.errorRate(t0), null, "no telemetry yet");
  assert.equal(stats.summary(t0).errorRate, null);
  // Requests that all succeeded: a measured 0 %.
  for (let i = 0; i < 10; i += 1) stats.add(event(t0 + i * 100), t0 + i * 100);
  assert.equal(stats.errorRate(t0 + 1_000), 0);
  // The traffic stopped two minutes ago: nothing left in the minute's window.
  assert.equal(stats.errorRate(t0 + 120_000), null);
  assert.equal(stats.cacheHitRate(t0 + 120_000), null, "as the cache hit rate beside it");
});
