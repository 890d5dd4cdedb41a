// The LB's hold queue (SkyLB selective pushing): requests that no replica or peer can take yet wait
// here in FIFO order. Pure: it reads no clock and sets no timer. The caller passes `now` and the
// current bounds, and asks when the head expires, so the proxy arms one timer and the simulator
// schedules one event. Bounds are read at each call, so a new config's bounds apply to requests
// already waiting, and deadlines stay in FIFO order (only the head can be the next to expire).
// FIFO among requests that wait for the same places: the LB core retries them oldest first, and a
// request that still cannot go holds back only later ones that could go nowhere else either (same
// model, hop, client key status and excluded targets; placement.ts, holdClass). A request for another
// model, or a keyed one a key-requiring peer may take, is not stuck behind it.

interface Waiting<T> {
  item: T;
  enqueuedAt: number;
}

export class HoldQueue<T> {
  private items: (Waiting<T> | undefined)[] = [];
  private head = 0;
  /** Requests ever held (LbState.totals.queued). */
  totalHeld = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  /** Holds `item` unless `maxLength` requests already wait; false means refuse it (503). */
  push(item: T, now: number, maxLength: number): boolean {
    if (this.length >= maxLength) return false;
    this.items.push({ item, enqueuedAt: now });
    this.totalHeld++;
    return true;
  }

  /** The oldest request, without removing it. */
  peek(): T | undefined {
    return this.items[this.head]?.item;
  }

  /** Every waiting request, oldest first (a copy: the caller may remove while it walks it). */
  waiting(): T[] {
    const out: T[] = [];
    for (let i = this.head; i < this.items.length; i++) out.push((this.items[i] as Waiting<T>).item);
    return out;
  }

  /**
   * Offers the waiting requests to `place`, oldest first; each it places (returns true for) leaves
   * the queue. Requests wait for places by class (`classOf`): once one cannot go, the later ones of
   * its class are not offered, since they could go nowhere it could not, and a placement only adds
   * load. Those of other classes still are, so a request is never stuck behind one that waits for
   * other places.
   */
  placeReady(classOf: (item: T) => string, place: (item: T) => boolean): void {
    if (this.length === 0) return;
    const held = new Set<string>();
    for (const item of this.waiting()) {
      const cls = classOf(item);
      if (held.has(cls)) continue;
      if (!place(item)) {
        held.add(cls);
        continue;
      }
      if (this.peek() === item) this.shift();
      else this.remove(item);
    }
  }

  /** Removes and returns the oldest request. */
  shift(): T | undefined {
    const waiting = this.items[this.head];
    if (waiting === undefined) return undefined;
    this.items[this.head++] = undefined;
    this.compact();
    return waiting.item;
  }

  /** Removes and returns every request that has waited `maxWaitMs` or longer, oldest first. */
  expire(now: number, maxWaitMs: number): T[] {
    const out: T[] = [];
    for (;;) {
      const waiting = this.items[this.head];
      // The same sum nextExpiryAt() names: in floating point `now - enqueuedAt < maxWaitMs` can hold at
      // `now = enqueuedAt + maxWaitMs` ((5699.95 + 30000) - 5699.95 = 29999.999999999996), and a
      // wake-up armed for that time expired nothing and re-armed itself for ever (the simulator hung).
      if (waiting === undefined || now < waiting.enqueuedAt + maxWaitMs) break;
      out.push(waiting.item);
      this.items[this.head++] = undefined;
    }
    this.compact();
    return out;
  }

  /** When the head will have waited `maxWaitMs`, or null when nothing waits. */
  nextExpiryAt(maxWaitMs: number): number | null {
    const waiting = this.items[this.head];
    return waiting === undefined ? null : waiting.enqueuedAt + maxWaitMs;
  }

  /** How long the oldest request has waited, in ms (0 when empty). */
  oldestWaitMs(now: number): number {
    const waiting = this.items[this.head];
    return waiting ? Math.max(0, now - waiting.enqueuedAt) : 0;
  }

  /** Removes one request (its client went away). Returns whether it was waiting. */
  remove(item: T): boolean {
    for (let i = this.head; i < this.items.length; i++) {
      if (this.items[i]?.item === item) {
        this.items.splice(i, 1);
        return true;
      }
    }
    return false;
  }

  /** Removes and returns everything (shutdown). */
  clear(): T[] {
    const out = this.waiting();
    this.items = [];
    this.head = 0;
    return out;
  }

  private compact(): void {
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 32 && this.head * 2 > this.items.length) {
      // Drop the consumed prefix once it dominates, so memory tracks the live length.
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}
