// The parts of the trace bench:tuner tunes and judges on: its halves and quarters in time, and the
// trace with its halves traded (--swap-halves). The span is the rows' earliest and latest timestamp,
// not the file's first and last row: a log written in completion order (or sorted otherwise) has rows
// before its first row's time and after its last row's, which fell in no half and no quarter, and
// --swap-halves shifted the late ones into the other half.

import { inSendOrder, type TraceRequest } from "@meridian/workload";
import { windowRows } from "./tuner-regimes";

/** [start, end) in source time: the earliest timestamp, and 1 ms after the latest. */
export function traceSpan(rows: readonly TraceRequest[]): { start: number; end: number } {
  let start = Infinity;
  let latest = -Infinity;
  for (const r of rows) {
    if (r.sourceTimestampMs < start) start = r.sourceTimestampMs;
    if (r.sourceTimestampMs > latest) latest = r.sourceTimestampMs;
  }
  return { start, end: latest + 1 };
}

/**
 * The rows in send order, cut at the midpoint and the quarters of `span` (default: the rows' own).
 * A swapped trace is cut on the span of the trace it was swapped from: its own span can start later
 * (when no row sits right at the old midpoint), and its midpoint then fell inside the half moved last.
 */
export function traceParts(rows: readonly TraceRequest[], span: { start: number; end: number } = traceSpan(rows)) {
  const sorted = inSendOrder(rows);
  const { start, end } = span;
  const mid = start + (end - start) / 2;
  return {
    rows: sorted,
    halves: { first: windowRows(sorted, start, mid), second: windowRows(sorted, mid, end) },
    quarters: [0, 1, 2, 3].map((q) => windowRows(sorted, start + ((end - start) * q) / 4, start + ((end - start) * (q + 1)) / 4)),
  };
}

/**
 * The trace with its halves in the other order (each half keeps its own spacing), in send order,
 * renumbered; within the trace's own span, the halves meeting at its midpoint (traceParts of the
 * result on traceSpan(trace) gives the halves traded, none of their rows across).
 */
export function swapHalves(trace: readonly TraceRequest[]): TraceRequest[] {
  const sorted = inSendOrder(trace);
  const { start: first, end } = traceSpan(sorted);
  // traceParts's midpoint, not floored: a floored one moved the rows at the centre across.
  const mid = first + (end - first) / 2;
  const moved = (r: TraceRequest, by: number) => ({ ...r, sourceTimestampMs: r.sourceTimestampMs + by, timestampMs: r.sourceTimestampMs + by });
  const late = sorted.filter((r) => r.sourceTimestampMs >= mid).map((r) => moved(r, first - mid));
  const early = sorted.filter((r) => r.sourceTimestampMs < mid).map((r) => moved(r, end - mid));
  return [...late, ...early].map((r, index) => ({ ...r, index }));
}
