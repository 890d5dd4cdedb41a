import { strict as assert } from "node:assert";
import { test } from "node:test";
import { replicaCache } from "../testing/replica-cache";
import { indexStatus } from "./index-status";

const cache = replicaCache;

test("a replica whose index collapsed or was cleared stands out; a healthy one does not", () => {
  const now = 1_000_000;
  assert.equal(indexStatus(cache(), now).kind, "ok");
  assert.equal(indexStatus(cache(), now).detail, null);
  assert.equal(indexStatus(cache({ accuracy: 0.7 }), now).kind, "drifting");
  assert.equal(indexStatus(cache({ accuracy: 0.1 }), now).kind, "collapsed");
  const restarted = indexStatus(cache({ accuracy: 0.1, clears: 1, lastClearAt: now - 30_000, lastClearReason: "engine-restart" }), now);
  assert.equal(restarted.kind, "cleared");
  assert.match(restarted.detail ?? "", /30 s ago: the engine restarted/);
  const flushed = indexStatus(cache({ clears: 1, lastClearAt: now - 10_000, lastClearReason: "cache-lost" }), now);
  assert.match(flushed.detail ?? "", /cache was emptied/);
  assert.equal(indexStatus(cache({ clears: 1, lastClearAt: now - 600_000, lastClearReason: "engine-restart" }), now).kind, "ok", "an old clear is history");
});

test("an engine that reports no cached tokens says how to turn the reports on", () => {
  const status = indexStatus(cache({ accuracy: null, reports: 0, unreported: 12, cachedTokensReported: false }), 0);
  assert.equal(status.kind, "no-cache-reports");
  assert.match(status.detail ?? "", /--enable-prompt-tokens-details/);
  assert.match(status.detail ?? "", /--enable-cache-report/);
  assert.equal(indexStatus(null, 0).kind, "unknown");
  assert.equal(indexStatus(cache({ accuracy: null, reports: 0 }), 0).kind, "unknown");
});
