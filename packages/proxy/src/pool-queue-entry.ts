// A request waiting in a target's pool for a connection, which can be cancelled while it waits there.
import type { IncomingHttpHeaders } from "node:http";
import type { Dispatcher } from "undici";

/**
 * What a target's pool holds of a request while it waits there for a connection. undici cannot take
 * a request out of that queue (dispatch takes no signal, and even request()'s signal acts only once
 * the request has a connection), so a request cancelled there (its client left, its deadline passed)
 * would keep its body and its whole job in memory until a connection frees, which a hung replica may
 * never do. Cancelling drops both instead; the request is then aborted, unsent, when a connection
 * takes it. Once it has a connection, this only passes undici's events on to the exchange.
 */
export class PoolQueueEntry implements Dispatcher.DispatchHandler {
  /** The parts undici will write, a list of its own: emptying it leaves the job's alone. */
  readonly body: Buffer[];
  private exchange: Dispatcher.DispatchHandler | null;
  private cancelled = false;

  constructor(exchange: Dispatcher.DispatchHandler, body: readonly Buffer[]) {
    this.exchange = exchange;
    this.body = [...body];
  }

  /** Nothing is kept, not even the reason: an Error's stack holds the frames (and the job) that made it. */
  cancel(): void {
    this.cancelled = true;
    this.exchange = null;
    this.body.length = 0;
  }

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    if (this.cancelled) controller.abort(new Error("cancelled while waiting for a connection"));
    else this.exchange?.onRequestStart?.(controller, context);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void {
    this.exchange?.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.exchange?.onResponseData?.(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    this.exchange?.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    this.exchange?.onResponseError?.(controller, error);
  }
}
