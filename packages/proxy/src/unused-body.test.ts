import { strict as assert } from "node:assert";
import { test } from "node:test";
import type { Dispatcher } from "undici";
import { MAX_DRAINED_BODY_BYTES, UnusedBodyDrain } from "./unused-body";

function controller(): { controller: Dispatcher.DispatchController; aborted: () => Error[] } {
  const aborted: Error[] = [];
  const stub = { abort: (reason: Error) => void aborted.push(reason) } as unknown as Dispatcher.DispatchController;
  return { controller: stub, aborted: () => aborted };
}

test("a short unused body read to its end leaves its connection open", () => {
  const { controller: c, aborted } = controller();
  const drain = new UnusedBodyDrain(c, { "content-length": "80" });
  drain.data(Buffer.alloc(80));
  drain.end();
  assert.deepEqual(aborted(), []);
});

test("an unused body announced over the limit is cut at once, unread", () => {
  const { controller: c, aborted } = controller();
  new UnusedBodyDrain(c, { "content-length": String(MAX_DRAINED_BODY_BYTES + 1) });
  assert.equal(aborted().length, 1);
  assert.match(aborted()[0]?.message ?? "", /over 65536/);
});

test("an unused body of no announced length is cut once it grows over the limit, and only once", () => {
  const { controller: c, aborted } = controller();
  const drain = new UnusedBodyDrain(c, {});
  drain.data(Buffer.alloc(MAX_DRAINED_BODY_BYTES));
  assert.deepEqual(aborted(), []);
  drain.data(Buffer.alloc(1));
  drain.data(Buffer.alloc(1));
  drain.end();
  assert.equal(aborted().length, 1);
});
