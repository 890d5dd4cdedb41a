// The body of an answer the LB does not use (a 502, 503 or 504 whose request moved to another
// target): read to its end and dropped, so that its keep-alive connection goes back to the pool. An
// overloaded engine answering 503s would otherwise get a new TCP (and TLS) connection for each
// request the LB retries. A body too large or too slow to be a short error is not waited for: the
// connection is closed, as an engine that never ends its body would hold it for bodyTimeoutMs while
// the LB counts the replica's slot free. The request itself has already moved on; it never waits here.
import type { Dispatcher } from "undici";

/** An error body is a few hundred bytes; an answer past this is not read for its connection's sake. */
export const MAX_DRAINED_BODY_BYTES = 64 * 1024;
/** A short error body arrives with its head; one still coming after this is not waited for. */
const MAX_DRAIN_MS = 1_000;

export class UnusedBodyDrain {
  private bytes = 0;
  private timer: NodeJS.Timeout | null = null;
  private done = false;

  constructor(
    private readonly controller: Dispatcher.DispatchController,
    headers: Record<string, string | string[] | undefined>,
  ) {
    const length = Number(headers["content-length"]);
    if (Number.isFinite(length) && length > MAX_DRAINED_BODY_BYTES) {
      this.stop(`its body of ${length} bytes is over ${MAX_DRAINED_BODY_BYTES}`);
      return;
    }
    this.timer = setTimeout(() => this.stop(`its body did not end within ${MAX_DRAIN_MS} ms`), MAX_DRAIN_MS);
  }

  data(chunk: Buffer): void {
    if (this.done) return;
    this.bytes += chunk.length;
    if (this.bytes > MAX_DRAINED_BODY_BYTES) this.stop(`its body grew over ${MAX_DRAINED_BODY_BYTES} bytes`);
  }

  /** The body ended (the connection is free) or failed. */
  end(): void {
    this.done = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private stop(why: string): void {
    if (this.done) return;
    this.end();
    this.controller.abort(new Error(`answer not used (the request moved to another target): ${why}`));
  }
}
