import assert from "node:assert/strict";
import { test } from "node:test";
import { EventQueue } from "./event-queue";
import { percentile, percentiles } from "./stats";

test("event queue pops in time order and breaks ties by insertion order", () => {
  const q = new EventQueue<string>();
  const times = [5, 1, 3, 3, 9, 0, 3, 7, 1];
  times.forEach((t, i) => q.push(t, `${t}:${i}`));
  const out: string[] = [];
  for (let item = q.pop(); item; item = q.pop()) out.push(item.event);
  assert.deepEqual(out, ["0:5", "1:1", "1:8", "3:2", "3:3", "3:6", "5:0", "7:7", "9:4"]);
  assert.equal(q.size, 0);
});

test("event queue rejects non-finite times", () => {
  const q = new EventQueue<number>();
  assert.throws(() => q.push(Number.NaN, 1), RangeError);
});

test("percentiles are nearest-rank", () => {
  const values = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.deepEqual(percentiles(values), { p50: 50, p95: 95, p99: 99 });
  assert.equal(percentile([3], 95), 3);
  assert.ok(Number.isNaN(percentile([], 50)));
});
