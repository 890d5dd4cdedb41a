// The upstream exchange: one request/response with a replica or a peer LB, as an undici dispatch
// handler. SSE events pass through to the client as they arrive (with backpressure), response headers
// reach the client only with the first body bytes (so a failure before that can still be retried
// elsewhere without the client noticing), and the host is told what happened. It decides nothing.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { Dispatcher } from "undici";
import { bodyLength, type ParsedInference } from "./request";
import { SseObserver } from "./sse";

/** What the exchange needs of the request it carries. */
export interface ExchangeJob {
  req: IncomingMessage;
  res: ServerResponse;
  request: ParsedInference;
  /** The client's Authorization to pass to a replica (null: none, or it was a Meridian credential). */
  client: { forwardAuthorization: string | null };
  clientGone: boolean;
}

export interface UpstreamTarget {
  kind: "replica" | "peer";
  id: string;
  pool: Dispatcher;
  /** Full upstream path (the target's base path + the client's). */
  path: string;
}

/** The balancer's side of an exchange. */
export interface ExchangeHost<J extends ExchangeJob> {
  /** Headers arrived (status ≥ 200). False when the exchange was abandoned (retried elsewhere). */
  onHeaders(job: J, exchange: UpstreamExchange<J>): boolean;
  /** The client is about to get the response head. */
  writeClientHead(job: J, exchange: UpstreamExchange<J>): void;
  onEnd(job: J, exchange: UpstreamExchange<J>): void;
  /** The upstream failed; `clientSawBytes` when the head already went to the client. */
  onFailure(job: J, exchange: UpstreamExchange<J>, error: unknown, clientSawBytes: boolean): void;
  /** The first response byte arrived (the first-byte deadline is met). */
  onFirstByte(job: J, exchange: UpstreamExchange<J>): void;
}

/** The LB gave up waiting for a target's first byte: its deadline passed, or the replica turned
 * unhealthy. Nothing had reached the client, so the request may go elsewhere. */
export class UpstreamStallError extends Error {
  override name = "UpstreamStallError";
  constructor(
    message: string,
    readonly reason: "first_byte_deadline" | "replica_unhealthy" | "timeout",
  ) {
    super(message);
  }
}

export class UpstreamExchange<J extends ExchangeJob> implements Dispatcher.DispatchHandler {
  status = 0;
  ok = false;
  streaming = false;
  headers: Record<string, string | string[] | undefined> = {};
  observer: SseObserver | null = null;
  readonly buffered: Buffer[] = [];
  /** performance.now() when the request was handed to the pool. */
  readonly dispatchedAt = performance.now();
  firstByteAt: number | null = null;
  firstContentAt: number | null = null;
  private deadlineTimer: NodeJS.Timeout | null = null;
  private headWritten = false;
  private corked = false;
  /** Set once this exchange no longer drives the job (retried elsewhere, failed, client gone). */
  private abandoned = false;
  private controller: Dispatcher.DispatchController | null = null;
  /** What the pool holds of this request until it gets a connection (null once it has one). */
  private queued: PoolQueueEntry | null = null;

  constructor(
    private readonly host: ExchangeHost<J>,
    readonly job: J,
    readonly target: UpstreamTarget,
  ) {}

  /** Hands the request to the target's pool. */
  send(options: Omit<Dispatcher.DispatchOptions, "body">, body: readonly Buffer[]): void {
    this.queued = new PoolQueueEntry(this, body);
    // An array of parts is an Iterable body, which undici documents for dispatch
    // (docs/api/Dispatcher.md, DispatchOptions.body) though its .d.ts lists only single buffers.
    this.target.pool.dispatch({ ...options, body: this.queued.body as unknown as Buffer }, this.queued);
  }

  /** Stops the upstream request; the host hears of it as a failure (once). */
  abort(reason: Error): void {
    if (this.controller) {
      this.controller.abort(reason);
      return;
    }
    // Still waiting for a connection: the pool lets go of the body and of this exchange now, and
    // aborts the request unsent when it reaches a connection; the host moves on now.
    this.queued?.cancel();
    this.queued = null;
    if (this.abandoned) return;
    this.abandoned = true;
    this.clearDeadline();
    this.host.onFailure(this.job, this, reason, false);
  }

  /** True while no response byte has arrived and the exchange still drives its job. */
  get waiting(): boolean {
    return this.firstByteAt === null && !this.abandoned;
  }

  /** Calls `onExpire` unless a response byte arrives within `ms` of dispatch. */
  armDeadline(ms: number, onExpire: () => void): void {
    this.clearDeadline();
    if (!this.waiting) return;
    // libuv fires timers on its loop clock, cached per iteration in whole ms, so a timer can run a ms
    // or two before `ms` has passed on performance.now(): then re-arm for the rest, never act early.
    this.deadlineTimer = setTimeout(
      () => {
        this.deadlineTimer = null;
        if (!this.waiting) return;
        if (performance.now() - this.dispatchedAt < ms) this.armDeadline(ms, onExpire);
        else onExpire();
      },
      Math.max(0, ms - (performance.now() - this.dispatchedAt)),
    );
  }

  private clearDeadline(): void {
    if (this.deadlineTimer === null) return;
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = null;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    this.queued = null;
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (statusCode < 200) return; // 1xx informational
    this.status = statusCode;
    this.ok = statusCode >= 200 && statusCode < 300;
    this.headers = headers;
    const contentType = headers["content-type"];
    this.streaming = this.ok && typeof contentType === "string" && contentType.includes("text/event-stream");
    if (this.job.clientGone) {
      this.abandoned = true;
      this.clearDeadline();
      const reason = new Error("client closed the request");
      controller.abort(reason);
      this.host.onFailure(this.job, this, reason, false);
      return;
    }
    if (!this.host.onHeaders(this.job, this)) {
      this.abandoned = true;
      this.clearDeadline();
      return;
    }
    if (this.streaming) {
      this.observer = new SseObserver({
        // A peer LB already stripped (or kept) usage for the client; only strip what we asked for.
        stripUsage: this.target.kind === "replica" && this.job.request.stream && !this.job.request.clientWantsUsage,
        onFirstContent: () => {
          this.firstContentAt = performance.now();
        },
      });
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.abandoned) return;
    if (this.firstByteAt === null) {
      this.firstByteAt = performance.now();
      this.clearDeadline();
      this.host.onFirstByte(this.job, this);
    }
    if (!this.observer) {
      // Not a stream (a JSON completion or an error): small, parsed at the end anyway, so it goes
      // out in one write with its headers.
      this.buffered.push(chunk);
      return;
    }
    const out = this.observer.push(chunk);
    this.writeHead();
    const res = this.job.res;
    if (out.length === 0) return;
    // Writes made in the same tick (the last event and the end of the stream usually arrive in one
    // socket read) leave in one syscall.
    if (!this.corked) {
      this.corked = true;
      res.cork();
      process.nextTick(() => {
        this.corked = false;
        res.uncork();
      });
    }
    if (!res.write(out)) {
      controller.pause();
      res.once("drain", () => controller.resume());
    }
  }

  onResponseEnd(): void {
    if (this.abandoned) return;
    this.abandoned = true;
    this.clearDeadline();
    const res = this.job.res;
    this.writeHead();
    if (this.observer) {
      const rest = this.observer.end();
      if (rest.length > 0) res.write(rest);
      res.end();
    } else {
      res.end(this.buffered.length === 1 ? this.buffered[0] : Buffer.concat(this.buffered));
    }
    this.host.onEnd(this.job, this);
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.abandoned) return;
    this.abandoned = true;
    this.clearDeadline();
    this.host.onFailure(this.job, this, error, this.headWritten);
  }

  private writeHead(): void {
    if (this.headWritten) return;
    this.headWritten = true;
    this.host.writeClientHead(this.job, this);
  }
}

/**
 * What a target's pool holds of a request while it waits there for a connection. undici cannot take
 * a request out of that queue (dispatch takes no signal, and even request()'s signal acts only once
 * the request has a connection), so a request cancelled there (its client left, its deadline passed)
 * would keep its body and its whole job in memory until a connection frees, which a hung replica may
 * never do. Cancelling drops both instead; the request is then aborted, unsent, when a connection
 * takes it. Once it has a connection, this only passes undici's events on to the exchange.
 */
class PoolQueueEntry implements Dispatcher.DispatchHandler {
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

/** Response headers copied from upstream; hop-by-hop and length headers are the LB's own business. */
const PASSED_RESPONSE_HEADERS = ["content-type", "cache-control", "x-request-id", "openai-processing-ms", "x-meridian-replica"];

/** The head the client gets: the upstream's passable headers, where the answer came from, and the
 * exact length of a non-stream body (complete by now: it goes out in one write). */
export function clientResponseHeaders<J extends ExchangeJob>(exchange: UpstreamExchange<J>, lbId: string, closeConnection: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of PASSED_RESPONSE_HEADERS) {
    const value = exchange.headers[name];
    if (typeof value === "string") out[name] = value;
  }
  if (exchange.target.kind === "replica") out["x-meridian-replica"] = exchange.target.id;
  out["x-meridian-lb"] = lbId;
  if (exchange.target.kind === "peer") out["x-meridian-forwarded-to"] = exchange.target.id;
  if (closeConnection) out["connection"] = "close";
  if (!exchange.streaming) out["content-length"] = String(exchange.buffered.reduce((total, chunk) => total + chunk.length, 0));
  return out;
}

/** Sends the job's body to the target through the exchange. A replica gets the body with usage
 * requested on streams; a peer LB gets the client's original body (it makes its own usage decision). */
export function dispatchExchange<J extends ExchangeJob>(exchange: UpstreamExchange<J>, body: Buffer | Buffer[], headers: Record<string, string>): void {
  const { job, target } = exchange;
  const sent = target.kind === "replica" ? body : job.request.raw;
  const parts = Array.isArray(sent) ? sent : [sent];
  const out: Record<string, string> = { "content-type": "application/json", ...headers };
  // Parts are written back to back; undici needs the total length up front to avoid chunking.
  out["content-length"] = String(bodyLength(parts));
  // A peer gets this LB's peer credential (in `headers`), never the client's Authorization.
  const authorization = job.client.forwardAuthorization;
  if (target.kind === "replica" && authorization !== null) out["authorization"] = authorization;
  const session = job.req.headers["x-session-id"];
  if (typeof session === "string") out["x-session-id"] = session;
  // undici's handler API rather than request(): no Readable per response, chunks go straight to the
  // client socket, and backpressure is pause/resume on the upstream connection.
  exchange.send({ method: "POST", path: target.path, headers: out }, parts);
}

function codeOf(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code;
}

/** A failure that means the engine is gone (as opposed to a slow or erroring one). */
export function isConnectionFailure(error: unknown): boolean {
  const code = codeOf(error);
  return code === "ECONNREFUSED" || code === "ECONNRESET" || code === "EHOSTUNREACH" || code === "UND_ERR_CONNECT_TIMEOUT" || code === "UND_ERR_SOCKET";
}

/** Why a stalled request would leave its target (lb-core redispatch.ts): its replica turned
 * unhealthy (it will not answer), or its first byte is late (it may still). */
export function redispatchCause(error: unknown): "deadline" | "unhealthy" {
  return error instanceof UpstreamStallError && error.reason === "replica_unhealthy" ? "unhealthy" : "deadline";
}

/** The target took the request but sent no response head in time: the LB's first-byte watch gave
 * up, or the pool's headersTimeout passed (limits.headersTimeoutMs, the watch's own cap, so it fires
 * first only for a request dispatched under older, shorter limits). Slow, not gone. */
export function isStall(error: unknown): boolean {
  return error instanceof UpstreamStallError || codeOf(error) === "UND_ERR_HEADERS_TIMEOUT";
}
