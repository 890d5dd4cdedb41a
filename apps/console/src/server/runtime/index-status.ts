// How well an LB's prefix index knows a replica's cache, as one status an operator reads at a glance
// on the replicas page. The facts come from the serving LB's state (LbState replica `cache`:
// @meridian/routing cache-truth.ts); this decides only how to word them.
import "server-only";
import type { ReplicaCacheState } from "@meridian/protocol";

export type IndexStatusKind = "ok" | "drifting" | "collapsed" | "cleared" | "no-cache-reports" | "unknown";

export interface IndexStatus {
  kind: IndexStatusKind;
  /** The LB's rolling prediction accuracy (Σmin/Σmax over its window), or null. */
  accuracy: number | null;
  /** One line for the operator; null when all is well. */
  detail: string | null;
}

/** Below this the index's predictions are worse than a coin toss between "all" and "nothing": the
 * engine's cache was most likely emptied behind the LB (a restart, a /flush_cache). */
const COLLAPSED_BELOW = 0.5;
/** Below this the index lags the engine (capacity or horizon still adjusting). */
const DRIFTING_BELOW = 0.8;

export function indexStatus(cache: ReplicaCacheState | null, now: number): IndexStatus {
  if (cache === null) return { kind: "unknown", accuracy: null, detail: null };
  const accuracy = cache.accuracy;
  if (cache.lastClearAt !== null && now - cache.lastClearAt < cache.windowMs) {
    const why =
      cache.lastClearReason === "engine-restart"
        ? "the engine restarted"
        : cache.lastClearReason === "cache-lost"
          ? "its cache was emptied (it lost blocks far younger than it keeps)"
          : "the operator cleared it";
    return { kind: "cleared", accuracy, detail: `index cleared ${Math.round((now - cache.lastClearAt) / 1000)} s ago: ${why}` };
  }
  if (cache.cachedTokensReported === false) {
    return {
      kind: "no-cache-reports",
      accuracy,
      detail: "the engine reports no cached tokens: start vLLM with --enable-prompt-tokens-details, SGLang with --enable-cache-report",
    };
  }
  if (accuracy === null) return { kind: "unknown", accuracy, detail: null };
  if (accuracy < COLLAPSED_BELOW) return { kind: "collapsed", accuracy, detail: "predicted cached tokens far from what the engine reports" };
  if (accuracy < DRIFTING_BELOW) return { kind: "drifting", accuracy, detail: null };
  return { kind: "ok", accuracy, detail: null };
}
