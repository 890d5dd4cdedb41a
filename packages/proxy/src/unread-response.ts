// A response the LB has ended, whose client takes none of what is left for a whole `stallMs`, is
// dropped. While the upstream runs, a client that stops reading a stream is dropped after
// limits.bodyTimeoutMs (upstream.ts, awaitDrain); an answer the LB holds whole (up to 16 MiB) is
// written in one go once the upstream has ended, and nothing watched it after that: a client that
// never read kept the unsent bytes in this process (8.6 MB of a 12 MB answer, measured) for as long
// as it kept the connection open.
import type { ServerResponse } from "node:http";

/** Watches an ended response until it is flushed ('close'); destroys its connection when the bytes
 * left to write (the response's and its socket's buffers) did not shrink over `stallMs`. */
export function dropWhenUnread(res: ServerResponse, stallMs: number): void {
  if (res.writableFinished || res.destroyed) return;
  let left = res.writableLength;
  const timer = setInterval(() => {
    const now = res.writableLength;
    if (now < left) left = now;
    else res.destroy();
  }, stallMs);
  res.once("close", () => clearInterval(timer));
}
