// Whether a live series measured anything. The server's rolling series are gap-filled (one point per
// bucket of the window, traffic or not), so an empty state tests the points, never the length.

/** TTFT series: some bucket measured a percentile. */
export function hasTtft(series: readonly { p50: number | null; p95: number | null }[]): boolean {
  return series.some((p) => p.p50 !== null || p.p95 !== null);
}

/** Requests/errors series: some bucket saw a request (a gap is 0 req/s, not null). */
export function hasRequests(series: readonly { rps: number; errorsPerS: number }[]): boolean {
  return series.some((p) => p.rps > 0 || p.errorsPerS > 0);
}

/** Share-over-time series: some bucket routed a request to a replica. */
export function hasShares(series: readonly { shares: Record<string, number> }[]): boolean {
  return series.some((p) => Object.keys(p.shares).length > 0);
}

/** Cached-token series: some replica reported its cached tokens in some bucket. */
export function hasCacheReports(series: readonly { replicas: Record<string, unknown> }[]): boolean {
  return series.some((p) => Object.keys(p.replicas).length > 0);
}
