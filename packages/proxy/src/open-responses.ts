// The inference responses this LB still owes its clients: each from the request's arrival (its body
// may still be arriving) until the response has reached the client's socket whole, or the connection
// is gone (the response's 'close'). A graceful drain waits for this set. It waited for the upstream
// exchanges alone (InFlight), which a request enters only once its body is in and leaves when its
// upstream ends, while the answer may still sit in the socket's buffer; closing the connections then
// reset a client still uploading, and cut a 12 MB answer the client had read 3.9 MB of.
// A pipelined response waiting behind another on its connection emits no 'close' when the client
// hangs up: the connection's 'close' ends it too (client-socket.ts).
import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { onSocketClose } from "./client-socket";

export class OpenResponses {
  private readonly open = new Set<ServerResponse>();
  private readonly idleWaiters = new Set<() => void>();

  get size(): number {
    return this.open.size;
  }

  /** Counts `res` open until its 'close', or its connection's (`socket`). */
  track(res: ServerResponse, socket: Socket): void {
    this.open.add(res);
    const closed = (): void => {
      stopWatching();
      if (this.open.delete(res) && this.open.size === 0) this.wake();
    };
    const stopWatching = onSocketClose(socket, closed);
    res.once("close", closed);
  }

  /** Resolves true once every response is closed, false when `timeoutMs` passes first (or wake()). */
  whenIdle(timeoutMs: number): Promise<boolean> {
    if (this.open.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.idleWaiters.delete(done);
        resolve(this.open.size === 0);
      };
      const timer = setTimeout(done, timeoutMs);
      this.idleWaiters.add(done);
    });
  }

  /** Ends every wait now (a second signal during a drain: stop waiting). */
  wake(): void {
    for (const done of [...this.idleWaiters]) done();
  }
}
