// sendRest: what is left of an answer when the upstream ends goes out a slice at a time as the
// client takes it; a client that takes nothing for a whole stallMs is dropped, one that reads slowly
// but steadily is not, and the clock does not run while a pipelined answer waits for its connection.
// A stand-in response whose socket takes one slice per 'drain' the test emits, on mock timers.
import { strict as assert } from "node:assert";
import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { afterEach, beforeEach, mock, test } from "node:test";
import { sendRest } from "./unread-response";

const STALL_MS = 1_000;

/** A response whose socket is always full: every write is queued, and `takeOne()` is the client
 * reading one slice ('drain'). `socket` null stands for a pipelined answer not yet given its connection. */
class FakeResponse extends EventEmitter {
  socket: object | null;
  destroyed = false;
  writableFinished = false;
  ended = false;
  readonly written: Buffer[] = [];
  constructor(hasSocket: boolean) {
    super();
    this.socket = hasSocket ? {} : null;
  }
  write(chunk: Buffer): boolean {
    this.written.push(chunk);
    return false;
  }
  end(): void {
    this.ended = true;
  }
  destroy(): void {
    this.destroyed = true;
    this.emit("close");
  }
  takeOne(): void {
    this.emit("drain");
  }
  finish(): void {
    this.writableFinished = true;
    this.emit("close");
  }
}

function send(res: FakeResponse, bytes: number): void {
  sendRest(res as unknown as ServerResponse, new EventEmitter() as Socket, [Buffer.alloc(bytes)], STALL_MS);
}

beforeEach(() => mock.timers.enable({ apis: ["setTimeout"] }));
afterEach(() => mock.timers.reset());

test("a client that takes nothing for a whole stallMs is dropped", () => {
  const res = new FakeResponse(true);
  send(res, 1024 * 1024);
  mock.timers.tick(STALL_MS - 1);
  assert.equal(res.destroyed, false);
  mock.timers.tick(1);
  assert.equal(res.destroyed, true);
});

test("a client reading slowly but steadily gets every slice, however long the whole takes", () => {
  const res = new FakeResponse(true);
  send(res, 1024 * 1024); // 16 slices of 64 KiB
  for (let i = 0; i < 40 && !res.ended; i++) {
    mock.timers.tick(STALL_MS - 1); // 39 s in all: far past stallMs, never a whole stallMs idle
    res.takeOne();
  }
  assert.equal(res.destroyed, false);
  assert.equal(res.ended, true);
  assert.equal(Buffer.concat(res.written).length, 1024 * 1024);
  assert.equal(res.written.length, 16);
  res.finish();
  mock.timers.tick(STALL_MS * 10);
  assert.equal(res.destroyed, false, "the clock stops once the answer is out");
});

test("a pipelined answer waiting for its connection is not timed until it has it", () => {
  const res = new FakeResponse(false);
  send(res, 100);
  mock.timers.tick(STALL_MS * 10);
  assert.equal(res.destroyed, false);
  res.socket = {};
  res.emit("socket", res.socket);
  mock.timers.tick(STALL_MS);
  assert.equal(res.destroyed, true, "and then it is, like any other");
});
