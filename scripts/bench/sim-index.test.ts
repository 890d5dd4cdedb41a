import assert from "node:assert/strict";
import { test } from "node:test";
import { bundledTracePath, loadTrace } from "@meridian/workload";
import { traceRatePerS } from "./sim-index";

test("the held-out workload's rate is the loaded trace's (rows over its span, to 2 significant digits), not the conversation trace's 3.4/s", async () => {
  const rows = await loadTrace(bundledTracePath());
  const at = (...ms: number[]) => ms.map((sourceTimestampMs) => ({ sourceTimestampMs }));
  // 11 rows over 2 s, in any file order.
  assert.equal(traceRatePerS(at(2_000, 0, ...Array.from({ length: 9 }, (_, i) => 100 * i))), 5.5);
  assert.equal(traceRatePerS(at(0, 3_000)), 0.67, "2 rows over 3 s, to 2 significant digits");
  assert.equal(traceRatePerS(at(0, 3_600_000, 1_000)), 0.00083, "a sparse trace keeps a rate above 0");
  const span = (rows.at(-1)!.sourceTimestampMs - rows[0]!.sourceTimestampMs) / 1000;
  assert.equal(traceRatePerS(rows), Number((rows.length / span).toPrecision(2)));
  // A trace with no span has no rate (the workload at its rate is left out and the JSON says so).
  assert.equal(traceRatePerS(at(5, 5, 5)), null);
  assert.equal(traceRatePerS([]), null);
});
