// A binary min-heap of timed events for the discrete-event fleet simulator.
// Ties on time are broken by insertion order (a monotonically increasing sequence number), so two
// runs with the same seed pop events in exactly the same order: that is what makes runs deterministic.

export interface Timed<T> {
  time: number;
  seq: number;
  event: T;
}

export class EventQueue<T> {
  private readonly heap: Timed<T>[] = [];
  private nextSeq = 0;

  get size(): number {
    return this.heap.length;
  }

  push(time: number, event: T): void {
    if (!Number.isFinite(time)) throw new RangeError(`event time must be finite, got ${time}`);
    const item: Timed<T> = { time, seq: this.nextSeq++, event };
    const heap = this.heap;
    heap.push(item);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent]!;
      if (!before(item, p)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = item;
  }

  peekTime(): number | undefined {
    return this.heap[0]?.time;
  }

  pop(): Timed<T> | undefined {
    const heap = this.heap;
    const top = heap[0];
    if (top === undefined) return undefined;
    const last = heap.pop()!;
    if (heap.length > 0) {
      let i = 0;
      const n = heap.length;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        let c = l;
        if (r < n && before(heap[r]!, heap[l]!)) c = r;
        if (!before(heap[c]!, last)) break;
        heap[i] = heap[c]!;
        i = c;
      }
      heap[i] = last;
    }
    return top;
  }
}

function before<T>(a: Timed<T>, b: Timed<T>): boolean {
  return a.time < b.time || (a.time === b.time && a.seq < b.seq);
}
