// The engine model's phase queues.

/** A FIFO over an array with a moving head; entries that left the phase are skipped lazily. */
export class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  push(item: T): void {
    this.items.push(item);
  }

  peek(): T | undefined {
    return this.items[this.head];
  }

  shift(): T | undefined {
    const item = this.items[this.head];
    if (item === undefined) return undefined;
    this.head++;
    // Compact now and then so the array does not grow without bound.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  /** Items from the head on, for in-order scans. */
  at(offset: number): T | undefined {
    return this.items[this.head + offset];
  }
}
