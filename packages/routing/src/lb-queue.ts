// The LB's own FIFO for requests that cannot be placed yet (SkyLB selective pushing). Pure: it never
// reads a clock or sets a timer; the caller passes `now` and decides when to drain or expire.
// Bounded in length and in wait: past either bound a request should get 503 + Retry-After.

import { RoutingInputError, describe, requireFiniteNumber } from "./errors";

export interface LbQueueOptions {
  /** Most requests held at once. */
  maxLength: number;
  /** Longest a request may wait, in ms. */
  maxWaitMs: number;
}

export type EnqueueResult = { accepted: true } | { accepted: false; reason: "queue-full"; retryAfterSeconds: number };

interface Waiting<T> {
  item: T;
  enqueuedAt: number;
}

export class LbQueue<T> {
  readonly maxLength: number;
  readonly maxWaitMs: number;
  private items: (Waiting<T> | undefined)[] = [];
  private head = 0;

  constructor(options: LbQueueOptions) {
    if (!Number.isInteger(options.maxLength) || options.maxLength < 0) {
      throw new RoutingInputError("maxLength", `must be a non-negative integer, got ${describe(options.maxLength)}`);
    }
    if (!(options.maxWaitMs > 0) || !Number.isFinite(options.maxWaitMs)) {
      throw new RoutingInputError("maxWaitMs", `must be a positive finite number, got ${describe(options.maxWaitMs)}`);
    }
    this.maxLength = options.maxLength;
    this.maxWaitMs = options.maxWaitMs;
  }

  get length(): number {
    return this.items.length - this.head;
  }

  /** Adds a request unless the queue is full. */
  push(item: T, now: number): EnqueueResult {
    requireFiniteNumber("now", now);
    if (this.length >= this.maxLength) {
      return { accepted: false, reason: "queue-full", retryAfterSeconds: Math.max(1, Math.ceil(this.maxWaitMs / 1000)) };
    }
    this.items.push({ item, enqueuedAt: now });
    return { accepted: true };
  }

  /** The oldest request still within its wait bound, or undefined. Expired ones are skipped; take
   * them with expire() first if they need a 503. */
  shift(now: number): T | undefined {
    this.expire(now);
    if (this.length === 0) return undefined;
    const waiting = this.items[this.head] as Waiting<T>;
    this.items[this.head++] = undefined;
    this.compact();
    return waiting.item;
  }

  /** The oldest request without removing it. */
  peek(): T | undefined {
    return this.items[this.head]?.item;
  }

  /** Removes and returns every request that has waited maxWaitMs or longer (oldest first). */
  expire(now: number): T[] {
    requireFiniteNumber("now", now);
    const out: T[] = [];
    while (this.length > 0) {
      const waiting = this.items[this.head] as Waiting<T>;
      if (now - waiting.enqueuedAt < this.maxWaitMs) break;
      out.push(waiting.item);
      this.items[this.head++] = undefined;
    }
    this.compact();
    return out;
  }

  /** How long the oldest request has waited, in ms (0 when empty). */
  oldestWaitMs(now: number): number {
    const waiting = this.items[this.head];
    return waiting ? Math.max(0, now - waiting.enqueuedAt) : 0;
  }

  /** Removes a specific request (e.g. the client disconnected). Returns whether it was queued. */
  remove(item: T): boolean {
    for (let i = this.head; i < this.items.length; i++) {
      if (this.items[i]?.item === item) {
        this.items.splice(i, 1);
        return true;
      }
    }
    return false;
  }

  private compact(): void {
    // Drop the consumed prefix once it dominates, so memory tracks the live length.
    if (this.head > 32 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}
