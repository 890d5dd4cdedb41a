import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LbQueue } from "./lb-queue";

describe("LbQueue", () => {
  it("is first-in first-out", () => {
    const q = new LbQueue<string>({ maxLength: 10, maxWaitMs: 1000 });
    q.push("a", 0);
    q.push("b", 1);
    q.push("c", 2);
    assert.equal(q.peek(), "a");
    assert.deepEqual([q.shift(3), q.shift(3), q.shift(3), q.shift(3)], ["a", "b", "c", undefined]);
  });

  it("refuses past its length bound with a Retry-After hint", () => {
    const q = new LbQueue<number>({ maxLength: 2, maxWaitMs: 2500 });
    assert.deepEqual(q.push(1, 0), { accepted: true });
    q.push(2, 0);
    assert.deepEqual(q.push(3, 0), { accepted: false, reason: "queue-full", retryAfterSeconds: 3 });
    assert.equal(q.length, 2);
  });

  it("hands back requests that waited past the wait bound, and never serves them", () => {
    const q = new LbQueue<string>({ maxLength: 10, maxWaitMs: 100 });
    q.push("old", 0);
    q.push("new", 50);
    assert.equal(q.oldestWaitMs(80), 80);
    assert.deepEqual(q.expire(99), []);
    assert.deepEqual(q.expire(100), ["old"]);
    assert.equal(q.shift(120), "new");
    q.push("late", 200);
    assert.equal(q.shift(400), undefined, "an expired request is not dequeued for service");
  });

  it("removes a cancelled request and keeps memory bounded over long use", () => {
    const q = new LbQueue<number>({ maxLength: 5, maxWaitMs: 1000 });
    q.push(1, 0);
    q.push(2, 0);
    assert.equal(q.remove(1), true);
    assert.equal(q.remove(9), false);
    assert.equal(q.shift(1), 2);
    for (let i = 0; i < 10_000; i++) {
      q.push(i, i);
      assert.equal(q.shift(i), i);
    }
    assert.equal(q.length, 0);
  });

  it("rejects bad bounds and clocks", () => {
    assert.throws(() => new LbQueue({ maxLength: -1, maxWaitMs: 10 }), /maxLength/);
    assert.throws(() => new LbQueue({ maxLength: 1, maxWaitMs: 0 }), /maxWaitMs/);
    assert.throws(() => new LbQueue({ maxLength: 1, maxWaitMs: 10 }).push(1, Number.NaN), /now/);
  });
});
