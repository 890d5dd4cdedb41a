// Runs async operations one at a time, in the order they were queued: each starts after every
// operation queued before it has settled, so no two interleave across their awaits. A failed
// operation rejects its own promise and does not stop the queue.
import "server-only";

export class SerialQueue {
  /** The tail of the operations queued so far. */
  private tail: Promise<unknown> = Promise.resolve();

  /** Queues `work`. It must not queue onto this same queue and await that: it would wait for itself. */
  run<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work);
    this.tail = result.catch(() => undefined);
    return result;
  }

  /** Resolves once every operation queued so far has settled. */
  idle(): Promise<void> {
    return this.run(async () => undefined);
  }
}
