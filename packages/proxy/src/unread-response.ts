// The rest of an answer, written to the client once the upstream has ended, and a client that stops
// taking it. While the upstream runs, a client that stops reading a stream is dropped after
// limits.bodyTimeoutMs (upstream.ts, awaitDrain). What is left at the end (an answer the LB held
// whole, up to 16 MiB, or a passed-through body's backlog) was written in one go and nothing watched
// it: a client that never read kept the unsent bytes in this process (8.6 MB of a 12 MB answer,
// measured) for as long as it kept its connection.
//
// So the rest goes out a slice at a time, the next once the client's socket has taken the last
// ('drain'), and a client that takes nothing for a whole `stallMs` is dropped. One large write, or
// several queued at once (Node's writev merges them), shows no progress until all of it is out: a
// client reading 12 MB steadily at 3 MB/s was taken for one that stopped. The clock runs only while
// the response has its socket: a pipelined answer waits behind those before it on the connection.
import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { onSocketClose } from "./client-socket";

/** Small enough that a slow client's progress shows (a slice a `stallMs`: 218 bytes/s at the default
 * 300 s), large enough to cost nothing (16 MiB is 256 writes). */
const SLICE_BYTES = 64 * 1024;

/** Writes `parts` to `res` and ends it, dropping a client that takes none of it for `stallMs`.
 * `socket`: the request's connection, whose 'close' ends the watch on a response that never got it. */
export function sendRest(res: ServerResponse, socket: Socket, parts: readonly Buffer[], stallMs: number): void {
  const slices = parts.flatMap((part) => sliced(part));
  let next = 0;
  let timer: NodeJS.Timeout | null = null;
  const stopClock = (): void => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
  const startClock = (): void => {
    stopClock();
    timer = setTimeout(() => res.destroy(), stallMs);
  };
  /** Runs the clock from now, or from when the response gets its socket. */
  const waitForClient = (): void => {
    if (res.socket) startClock();
    else res.once("socket", startClock);
  };
  const stopWatching = onSocketClose(socket, stopClock);
  res.once("close", () => {
    stopClock();
    stopWatching();
  });
  const pump = (): void => {
    stopClock();
    if (res.destroyed) return;
    while (next < slices.length) {
      if (!res.write(slices[next++] as Buffer)) {
        res.once("drain", pump);
        return waitForClient();
      }
    }
    res.end();
    // The last slices are out of sight until all of them are: 'finish' (then 'close') stops the clock.
    if (!res.writableFinished) waitForClient();
  };
  pump();
}

function sliced(part: Buffer): Buffer[] {
  if (part.length <= SLICE_BYTES) return part.length === 0 ? [] : [part];
  const out: Buffer[] = [];
  for (let at = 0; at < part.length; at += SLICE_BYTES) out.push(part.subarray(at, at + SLICE_BYTES));
  return out;
}
