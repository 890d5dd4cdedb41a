// The LB's FIFO of requests waiting for an available replica (SkyLB selective pushing). Bounded in
// length and in wait: past either bound a request is refused with 503 + Retry-After rather than held
// indefinitely. Strict FIFO: only the head is retried, so a later request never overtakes an earlier
// one for a freed slot.

export interface QueuedRequest {
  readonly enqueuedAt: number;
  /** Tries to route the request now; true when it left the queue (dispatched, forwarded or failed). */
  attempt(): boolean;
  /** Called when the wait bound expires. */
  expire(): void;
}

interface Entry {
  request: QueuedRequest;
  timer: NodeJS.Timeout;
  settled: boolean;
}

export class AdmissionQueue {
  private readonly entries: Entry[] = [];
  private draining = false;
  totalQueued = 0;

  constructor(private readonly bounds: () => { maxLength: number; maxWaitMs: number }) {}

  get length(): number {
    return this.entries.length;
  }

  oldestWaitMs(now: number): number {
    const head = this.entries[0];
    return head ? now - head.request.enqueuedAt : 0;
  }

  /** False when the queue is full (the caller answers 503). */
  offer(request: QueuedRequest): { accepted: boolean; cancel: () => void } {
    const { maxLength, maxWaitMs } = this.bounds();
    if (this.entries.length >= maxLength) return { accepted: false, cancel: () => {} };
    const entry: Entry = {
      request,
      settled: false,
      timer: setTimeout(() => {
        if (this.remove(entry)) request.expire();
      }, maxWaitMs),
    };
    this.entries.push(entry);
    this.totalQueued++;
    return { accepted: true, cancel: () => void this.remove(entry) };
  }

  /** Retries from the head while requests can be placed. Called whenever capacity may have freed. */
  drain(): void {
    if (this.draining) return;
    this.draining = true;
    try {
      for (;;) {
        const head = this.entries[0];
        if (!head) break;
        if (!head.request.attempt()) break;
        this.remove(head);
      }
    } finally {
      this.draining = false;
    }
  }

  /** Fails every waiting request (shutdown). */
  clear(): void {
    for (const entry of [...this.entries]) {
      if (this.remove(entry)) entry.request.expire();
    }
  }

  private remove(entry: Entry): boolean {
    if (entry.settled) return false;
    entry.settled = true;
    clearTimeout(entry.timer);
    const at = this.entries.indexOf(entry);
    if (at >= 0) this.entries.splice(at, 1);
    return true;
  }
}
