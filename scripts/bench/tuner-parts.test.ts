import assert from "node:assert/strict";
import { test } from "node:test";
import { bundledTracePath, loadTrace, type TraceRequest } from "@meridian/workload";
import { swapHalves, traceParts, traceSpan } from "./tuner-parts";
import { regime, requestsOf } from "./tuner-regimes";

/** The bundled fixture with its latest rows first and its earliest rows last in the file (a log written out of send order). */
async function outOfOrder(): Promise<{ sorted: TraceRequest[]; shuffled: TraceRequest[] }> {
  const sorted = await loadTrace(bundledTracePath());
  return { sorted, shuffled: [...sorted.slice(-7), ...sorted.slice(7, -7), ...sorted.slice(0, 7)] };
}

const ids = (rows: readonly TraceRequest[]) => rows.map((r) => r.index).sort((a, b) => a - b);

test("every row of a trace out of file order falls in one half and one quarter, cut by its earliest and latest timestamp", async () => {
  const { sorted, shuffled } = await outOfOrder();
  const parts = traceParts(shuffled);
  assert.deepEqual(ids([...parts.halves.first, ...parts.halves.second]), ids(sorted));
  assert.deepEqual(ids(parts.quarters.flat()), ids(sorted));
  // The same parts as the trace in send order gives.
  const inOrder = traceParts(sorted);
  assert.deepEqual(parts.halves, inOrder.halves);
  assert.deepEqual(parts.quarters, inOrder.quarters);
  assert.deepEqual(traceSpan(shuffled), { start: sorted[0]!.sourceTimestampMs, end: sorted.at(-1)!.sourceTimestampMs + 1 });
});

test("--swap-halves on a trace out of file order moves every row of the second half first, none across", async () => {
  const { sorted, shuffled } = await outOfOrder();
  const swapped = swapHalves(shuffled);
  assert.equal(swapped.length, sorted.length);
  assert.deepEqual(swapped, swapHalves(sorted));
  const before = traceParts(sorted).halves;
  const after = traceParts(swapped).halves;
  const bySource = (rows: readonly TraceRequest[]) => rows.map((r) => `${r.inputTokens}:${r.hashIds.join(",")}`).sort();
  assert.deepEqual(bySource(after.first), bySource(before.second));
  assert.deepEqual(bySource(after.second), bySource(before.first));
});

test("a window's requests start at its earliest row, whatever the file order (no negative arrivals)", async () => {
  const { sorted, shuffled } = await outOfOrder();
  const r = regime("short");
  const fromShuffled = requestsOf(r, shuffled, 1);
  assert.equal(Math.min(...fromShuffled.map((q) => q.arrivalMs)), 0);
  assert.deepEqual(fromShuffled, requestsOf(r, sorted, 1));
});

test("--swap-halves trades the halves exactly when no row sits at the midpoint: the swapped trace is cut on the loaded trace's span", async () => {
  const all = await loadTrace(bundledTracePath());
  const { start, end } = traceSpan(all);
  const mid = start + (end - start) / 2;
  // No row in the 20 s after the midpoint: the swapped trace's own span would start 20 s late.
  const gapped = all.filter((r) => r.sourceTimestampMs < mid || r.sourceTimestampMs >= mid + 20_000);
  const before = traceParts(gapped, traceSpan(gapped)).halves;
  const after = traceParts(swapHalves(gapped), traceSpan(gapped)).halves;
  const bySource = (rows: readonly TraceRequest[]) => rows.map((r) => `${r.inputTokens}:${r.hashIds.join(",")}`).sort();
  assert.deepEqual(bySource(after.first), bySource(before.second));
  assert.deepEqual(bySource(after.second), bySource(before.first));
});
