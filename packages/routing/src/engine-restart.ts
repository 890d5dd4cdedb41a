// Engine restart detection: when an engine's cache has been emptied behind the LB's back, the LB
// must drop that replica's part of its prefix index at once, instead of routing to a cache that no
// longer exists until the routes age out. Two independent signals:
//
//   the engine's metrics  a new process: its start time moved (process_start_time_seconds) or a
//                         cumulative counter went back (prompt / generation tokens). Counters only
//                         ever grow within one process, so a drop means a restart even when the
//                         engine exports no start time (SGLang in multiprocess mode does not).
//   its cache reports     a run of requests on which the index predicted cached tokens and the
//                         engine reported none (CacheTruth feeds only predictions beyond the
//                         feedback's one-block rounding slack: a one-block miss is page alignment).
//                         This also catches what metrics cannot show: SGLang's /flush_cache, a
//                         cache reset, an engine swapped behind the same address.
//                         One zero report is ordinary (a conversation evicted in the meantime; the
//                         horizon feedback handles it); several in a row where the index expected
//                         hits are not.

/** What identifies one engine process in its metrics. Either field may be unknown. */
export interface EngineEpoch {
  /** process_start_time_seconds, or null when the engine does not export it. */
  startTimeSec: number | null;
  /** Cumulative counters by series (name and labels, as the proxy keys them): a series missing
   * from one scrape says nothing; one that went back from its last value is a restart (CacheTruth
   * remembers each series' last value across the scrapes of one process: mergeEpoch). */
  counters: Readonly<Record<string, number>>;
}

/** Start times closer than this are the same process (exporters round, clocks jitter). */
const START_TIME_SLACK_SEC = 1;

/** True when `next` is a different engine process than `previous` (see the file header). */
export function engineRestarted(previous: EngineEpoch | null, next: EngineEpoch): boolean {
  if (previous === null) return false;
  const a = previous.startTimeSec;
  const b = next.startTimeSec;
  if (a !== null && b !== null && Number.isFinite(a) && Number.isFinite(b) && Math.abs(b - a) > START_TIME_SLACK_SEC) return true;
  for (const [name, before] of Object.entries(previous.counters)) {
    const after = next.counters[name];
    if (typeof after === "number" && Number.isFinite(after) && Number.isFinite(before) && after < before) return true;
  }
  return false;
}

/**
 * What the LB remembers of one engine process after a scrape: `next` laid over `previous`, the last
 * finite value of every counter series and the last known start time. A scrape answers for what it
 * carries only: a DP rank that answered late, or a scrape without process_start_time_seconds, must not
 * erase the value the next scrape is compared with, or a restart in between goes unseen. Call it only
 * for scrapes of one process (not across a restart: the new process starts the memory over).
 */
export function mergeEpoch(previous: EngineEpoch, next: EngineEpoch): EngineEpoch {
  const counters: Record<string, number> = { ...previous.counters };
  for (const [name, value] of Object.entries(next.counters)) if (Number.isFinite(value)) counters[name] = value;
  const start = next.startTimeSec;
  return { startTimeSec: start !== null && Number.isFinite(start) ? start : previous.startTimeSec, counters };
}

/** Consecutive zero-cached reports on predicted hits that count as a cache reset. Three: a single
 * LRU miss is routine and two in a row happen when one conversation's turns race; three independent
 * requests all finding nothing where the index held blocks is a reset. */
export const ZERO_CACHED_RUN_TO_CLEAR = 3;

/** Counts, per replica, the current run of "predicted hits, engine reported zero" reports. */
export class ZeroCachedRun {
  private readonly runs = new Map<string, number>();

  constructor(private readonly threshold = ZERO_CACHED_RUN_TO_CLEAR) {}

  /**
   * Feeds one report (cachedTokens already validated; null = unreported, which neither extends nor
   * breaks a run). Returns true when the run reaches the threshold; the run then starts over.
   */
  observe(replicaId: string, predictedTokens: number, cachedTokens: number | null): boolean {
    if (cachedTokens === null) return false;
    if (cachedTokens > 0) {
      this.runs.delete(replicaId);
      return false;
    }
    if (!(predictedTokens > 0)) return false;
    const run = (this.runs.get(replicaId) ?? 0) + 1;
    if (run >= this.threshold) {
      this.runs.delete(replicaId);
      return true;
    }
    this.runs.set(replicaId, run);
    return false;
  }

  reset(replicaId: string): void {
    this.runs.delete(replicaId);
  }
}
