import { strict as assert } from "node:assert";
import { test } from "node:test";
import type { LbState, ReplicaCacheState } from "@meridian/protocol";
import { replicaCache } from "../testing/replica-cache";
import { LbHealthBook } from "./lb-health";

const cache = replicaCache;

/** An LB whose state lists one replica, "r1", with this cache view and these in-flight requests. */
function lbReporting(replicaCache: ReplicaCacheState, inFlight: number) {
  const replica = {
    id: "r1",
    healthy: true,
    inFlight,
    queuedTokens: 10 * inFlight,
    rttMs: 5,
    cacheHitRate: 0.5,
    predictionAccuracy: 0.9,
    full: false,
    cache: replicaCache,
  };
  const state = { replicas: [replica] } as unknown as LbState;
  return { healthy: true, consecutiveFailures: 0, lastProbeAt: 1, lastOkAt: 1, everHealthy: true, error: null, state, stateAt: 1 };
}

test("a replica's view is its serving LB's, with load summed over LBs; an index clear any LB saw more recently shows", () => {
  const book = new LbHealthBook();
  book.record("lb-home", lbReporting(cache({ accuracy: 0.97 }), 2));
  book.record("lb-other", lbReporting(cache({ accuracy: 0.93 }), 3));
  const view = book.replica("r1", "lb-home")!;
  assert.equal(view.cache.accuracy, 0.97, "the serving LB's view");
  assert.deepEqual([view.inFlight, view.queuedTokens], [5, 50]);

  // The other LB sent the requests that met a flushed engine: its clear is what the operator must see.
  book.record("lb-other", lbReporting(cache({ accuracy: 0.2, clears: 1, lastClearAt: 5_000, lastClearReason: "cache-lost" }), 3));
  assert.equal(book.replica("r1", "lb-home")!.cache.lastClearReason, "cache-lost");
  // A clear the serving LB recorded later than the other's is its own.
  book.record("lb-home", lbReporting(cache({ clears: 1, lastClearAt: 6_000, lastClearReason: "engine-restart" }), 2));
  assert.equal(book.replica("r1", "lb-home")!.cache.lastClearReason, "engine-restart");
  assert.equal(book.replica("missing", "lb-home"), null);
});
