import { strict as assert } from "node:assert";
import { test } from "node:test";
import type { CachePoint, RequestPoint, SharePoint, TtftPoint } from "../server/runtime/rolling-stats";
import { hasCacheReports, hasRequests, hasShares, hasTtft } from "./series";

// The server's series are gap-filled: a quiet window is full length with empty points.
const starts = [0, 5_000, 10_000];

test("a gap-filled quiet window has no data; one measured bucket has", () => {
  const quietTtft: TtftPoint[] = starts.map((t) => ({ t, p50: null, p95: null }));
  assert.equal(hasTtft(quietTtft), false);
  const measuredTtft: TtftPoint[] = [...quietTtft, { t: 15_000, p50: 120, p95: 300 }];
  assert.equal(hasTtft(measuredTtft), true);

  const quietRequests: RequestPoint[] = starts.map((t) => ({ t, rps: 0, errorsPerS: 0 }));
  assert.equal(hasRequests(quietRequests), false);
  const requests: RequestPoint[] = [...quietRequests, { t: 15_000, rps: 0.2, errorsPerS: 0 }];
  assert.equal(hasRequests(requests), true);
  // Only failures still count as traffic.
  const failures: RequestPoint[] = [{ t: 0, rps: 0, errorsPerS: 0.2 }];
  assert.equal(hasRequests(failures), true);

  const quietShares: SharePoint[] = starts.map((t) => ({ t, shares: {} }));
  assert.equal(hasShares(quietShares), false);
  const shares: SharePoint[] = [...quietShares, { t: 15_000, shares: { r1: 1 } }];
  assert.equal(hasShares(shares), true);

  const quietCache: CachePoint[] = starts.map((t) => ({ t, replicas: {} }));
  assert.equal(hasCacheReports(quietCache), false);
  const cache: CachePoint[] = [...quietCache, { t: 15_000, replicas: { r1: { predicted: 10, actual: 8 } } }];
  assert.equal(hasCacheReports(cache), true);
});

test("an empty series has no data", () => {
  assert.equal(hasTtft([]), false);
  assert.equal(hasRequests([]), false);
  assert.equal(hasShares([]), false);
  assert.equal(hasCacheReports([]), false);
});
