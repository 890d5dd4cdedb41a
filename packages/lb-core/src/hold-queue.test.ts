import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { HoldQueue } from "./hold-queue";

describe("HoldQueue", () => {
  it("is first-in first-out", () => {
    const q = new HoldQueue<string>();
    q.push("a", 0, 10);
    q.push("b", 1, 10);
    q.push("c", 2, 10);
    assert.equal(q.peek(), "a");
    assert.deepEqual([q.shift(), q.shift(), q.shift(), q.shift()], ["a", "b", "c", undefined]);
    assert.equal(q.totalHeld, 3);
  });

  it("refuses past its length bound, and a bound of 0 refuses everything", () => {
    const q = new HoldQueue<number>();
    assert.equal(q.push(1, 0, 2), true);
    assert.equal(q.push(2, 0, 2), true);
    assert.equal(q.push(3, 0, 2), false);
    assert.equal(q.length, 2);
    assert.equal(new HoldQueue<number>().push(1, 0, 0), false);
  });

  it("hands back requests that waited the bound, and says when the head expires", () => {
    const q = new HoldQueue<string>();
    assert.equal(q.nextExpiryAt(100), null);
    q.push("old", 0, 10);
    q.push("new", 50, 10);
    assert.equal(q.oldestWaitMs(80), 80);
    assert.equal(q.nextExpiryAt(100), 100);
    assert.deepEqual(q.expire(99, 100), []);
    assert.deepEqual(q.expire(100, 100), ["old"]);
    assert.equal(q.nextExpiryAt(100), 150);
    // A tighter bound (a new config) applies to requests already waiting.
    assert.deepEqual(q.expire(100, 40), ["new"]);
    assert.equal(q.length, 0);
  });

  it("expires the head at exactly the time nextExpiryAt() names, fractional times included", () => {
    // (5699.95 + 30000) - 5699.95 is 29999.999999999996 in floating point: a wake-up armed for the
    // named time used to expire nothing and re-arm itself there for ever.
    for (let i = 0; i < 2_000; i++) {
      const q = new HoldQueue<number>();
      const enqueuedAt = i * 0.05 + 0.01 * (i % 7);
      q.push(i, enqueuedAt, 10);
      const at = q.nextExpiryAt(30_000) as number;
      assert.deepEqual(q.expire(at, 30_000), [i], `enqueued at ${enqueuedAt}, expired at ${at}`);
    }
  });

  it("removes a cancelled request, clears on shutdown, and keeps memory bounded over long use", () => {
    const q = new HoldQueue<number>();
    q.push(1, 0, 5);
    q.push(2, 0, 5);
    assert.equal(q.remove(1), true);
    assert.equal(q.remove(9), false);
    assert.equal(q.shift(), 2);
    for (let i = 0; i < 10_000; i++) {
      q.push(i, i, 5);
      assert.equal(q.shift(), i);
    }
    assert.equal(q.length, 0);
    q.push(7, 0, 5);
    q.push(8, 0, 5);
    assert.deepEqual(q.clear(), [7, 8]);
    assert.equal(q.length, 0);
    assert.equal(q.peek(), undefined);
  });

  it("offers the waiting requests oldest first; one that cannot go holds back only later ones of its class", () => {
    const q = new HoldQueue<string>();
    for (const item of ["x1", "y1", "x2", "y2", "z1"]) q.push(item, 0, 10);
    const offered: string[] = [];
    // x cannot go; y and z can.
    q.placeReady(
      (item) => item[0]!,
      (item) => {
        offered.push(item);
        return !item.startsWith("x");
      },
    );
    assert.deepEqual(offered, ["x1", "y1", "y2", "z1"], "x2 is not offered once x1 could not go");
    assert.deepEqual(q.waiting(), ["x1", "x2"]);
    assert.equal(q.peek(), "x1");
  });
});
