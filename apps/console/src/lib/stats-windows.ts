// The trailing window behind the per-replica figures (share of requests, cache hit rate, prediction
// accuracy) on the replicas and overview pages. The server computes over it (rolling-stats.ts) and
// the pages name it, so a replica drained a moment ago is read as "still in the window", not as
// "still taking traffic".
export const REPLICA_STATS_WINDOW_MS = 60_000;
/** One point of the live time series (requests, TTFT, share over time). */
export const STATS_BUCKET_MS = 5_000;
/** The overview's TTFT stat shows the newest complete bucket that measured a TTFT while it ended at
 * most this long ago; after that the page says "no recent data". */
export const LATEST_TTFT_MAX_AGE_MS = 60_000;

/** "60 s", "5 min": the window as the column headers name it. */
export function windowLabel(ms: number): string {
  return ms >= 120_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 1000)} s`;
}
