// A replica's cache truth as an LB reports it (LbState replica `cache`), for the tests that word or
// pick it: a healthy, reporting replica unless the test overrides a field.
import "server-only";
import type { ReplicaCacheState } from "@meridian/protocol";

export const replicaCache = (over: Partial<ReplicaCacheState> = {}): ReplicaCacheState => ({
  accuracy: 0.95,
  windowMs: 60_000,
  reports: 20,
  unreported: 0,
  cachedTokensReported: true,
  predictedTokens: 1000,
  actualTokens: 950,
  capacityTokens: 262_144,
  capacitySource: "metrics",
  budgetBlocks: 16_384,
  horizonMs: null,
  routes: 10,
  clears: 0,
  lastClearAt: null,
  lastClearReason: null,
  ...over,
});
