import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { bundledTracePath } from "./bundled";
import { applyTraceControls, assignRegion } from "./controls";
import { loadTrace } from "./reader";
import { sessionKeyOf } from "./session-roots";

describe("trace controls", () => {
  it("time scale multiplies inter-arrival times on the bundled trace", async () => {
    const rows = await loadTrace(bundledTracePath());
    const scaled = applyTraceControls(rows, { timeScale: 2 });
    assert.equal(scaled.length, rows.length);
    const last = rows.at(-1)!;
    assert.equal(scaled.at(-1)!.timestampMs, (last.sourceTimestampMs - rows[0]!.sourceTimestampMs) * 2);
    assert.throws(() => applyTraceControls(rows, { timeScale: 0 }), /timeScale/);
  });

  it("assigns regions deterministically, per conversation, independent of key order", async () => {
    const rows = await loadTrace(bundledTracePath());
    const weights = { "us-ashburn": 1, "eu-frankfurt": 1, "ap-seoul": 1 };
    const reordered = { "ap-seoul": 1, "us-ashburn": 1, "eu-frankfurt": 1 };
    const byRoot = new Map<string, string>();
    for (const row of rows) {
      const key = sessionKeyOf(row.hashIds, 2);
      const region = assignRegion(key, weights);
      assert.equal(region, assignRegion(key, reordered));
      assert.equal(region, byRoot.get(key) ?? region, "every turn of a conversation lands in one region");
      byRoot.set(key, region);
    }
  });

  it("honours weights roughly", () => {
    const weights = { a: 6, b: 3, c: 1, d: 0 };
    const counts: Record<string, number> = { a: 0, b: 0, c: 0, d: 0 };
    const n = 20_000;
    for (let i = 0; i < n; i++) counts[assignRegion(`0/${i}`, weights)]!++;
    assert.equal(counts.d, 0);
    assert.ok(Math.abs(counts.a! / n - 0.6) < 0.02, `a share ${counts.a! / n}`);
    assert.ok(Math.abs(counts.b! / n - 0.3) < 0.02, `b share ${counts.b! / n}`);
    assert.ok(Math.abs(counts.c! / n - 0.1) < 0.02, `c share ${counts.c! / n}`);
    assert.throws(() => assignRegion("0/1", { a: 0 }), /positive weight/);
    assert.throws(() => assignRegion("0/1", { a: -1 }), /≥ 0/);
  });
});
