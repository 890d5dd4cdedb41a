// Trace controls: the timestamp window, re-basing, the time scale and region assignment (a row's
// conversation, the key its region is drawn from, is session-roots.ts's). Shared by the streaming
// reader, the in-memory parser and the generator's rows, so a window means the same thing everywhere.
import { hashUnit } from "../hash";
import type { TraceRequest } from "./types";

export interface TraceControls {
  /** Keep rows whose source timestamp is ≥ fromMs (inclusive). */
  fromMs?: number;
  /** Keep rows whose source timestamp is < toMs (exclusive), so adjacent windows do not overlap. */
  toMs?: number;
  /**
   * Re-base the kept rows so the first one is sent at 0 ms (default true). With `false` the source
   * timestamps are kept, so a window starting at 30 min waits 30 min before its first request.
   */
  rebase?: boolean;
  /**
   * Multiplies inter-arrival times (default 1): 2.0 spreads the same requests over twice the time,
   * halving the load. Applied after re-basing: `timestampMs = (source − base) × timeScale`.
   */
  timeScale?: number;
}

export type TraceRowTransform = (request: TraceRequest) => TraceRequest | undefined;

/**
 * A stateful per-row transform applying `controls` in file order: it returns undefined for rows
 * outside the window and re-bases on the first row it keeps.
 */
export function createTraceTransform(controls: TraceControls = {}): TraceRowTransform {
  const { fromMs = -Infinity, toMs = Infinity, rebase = true, timeScale = 1 } = controls;
  if (!(timeScale > 0) || !Number.isFinite(timeScale)) throw new Error(`timeScale must be a positive number, got ${timeScale}`);
  if (fromMs > toMs) throw new Error(`window is empty: fromMs ${fromMs} > toMs ${toMs}`);
  let base: number | undefined = rebase ? undefined : 0;
  return (request) => {
    const t = request.sourceTimestampMs;
    if (t < fromMs || t >= toMs) return undefined;
    base ??= t;
    return { ...request, timestampMs: (t - base) * timeScale };
  };
}

/** Applies `controls` to rows already in memory (in their order). */
export function applyTraceControls(requests: Iterable<TraceRequest>, controls: TraceControls = {}): TraceRequest[] {
  const transform = createTraceTransform(controls);
  const out: TraceRequest[] = [];
  for (const request of requests) {
    const kept = transform(request);
    if (kept) out.push(kept);
  }
  return out;
}

/**
 * The order a workload's rows are sent in: by timestamp, rows with equal timestamps in index (file)
 * order. A trace need not be sorted (merged or hand-edited files are not); the simulator and the
 * live replay both send in this order, so an unsorted trace is the same workload to both.
 */
export function inSendOrder<T extends { timestampMs: number; index: number }>(rows: readonly T[]): T[] {
  return [...rows].sort((a, b) => a.timestampMs - b.timestampMs || a.index - b.index);
}

export type RegionWeights = Readonly<Record<string, number>>;

/**
 * Assigns a conversation to a region with probability proportional to `weights`, by hashing its
 * key: every turn of a conversation lands in the same region, in every process and on every run.
 * Regions are taken in sorted name order, so the result does not depend on the key order of
 * `weights`. `key` is a session key (a trace row's is sessionRoots()'s `id`); it takes no hash-id
 * list, since which of a row's ids name its conversation depends on the whole trace.
 */
export function assignRegion(key: string, weights: RegionWeights): string {
  const regions = Object.keys(weights).sort();
  let total = 0;
  for (const region of regions) {
    const w = weights[region] ?? 0;
    if (!(w >= 0) || !Number.isFinite(w)) throw new Error(`region weight for ${region} must be a finite number ≥ 0, got ${w}`);
    total += w;
  }
  if (!(total > 0)) throw new Error("region weights must include at least one positive weight");
  const target = hashUnit(`region:${key}`) * total;
  let acc = 0;
  let last = regions[0] as string;
  for (const region of regions) {
    const w = weights[region] ?? 0;
    if (w <= 0) continue;
    acc += w;
    last = region;
    if (target < acc) return region;
  }
  // Floating-point rounding can leave target == total; the last weighted region takes it.
  return last;
}

/** Equal weights over the given regions. */
export function equalWeights(regions: readonly string[]): Record<string, number> {
  return Object.fromEntries(regions.map((r) => [r, 1]));
}
