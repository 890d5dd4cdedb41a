// The upstream exchange: one request/response with a replica or a peer LB, as an undici dispatch
// handler. SSE events pass through to the client as they arrive (with backpressure, and a client that
// stops reading is dropped), a non-stream body is held to go out whole up to a cap, response headers
// reach the client only with the first body bytes forwarded, a stream's first whole event (so a failure
// before that can still be retried elsewhere without the client noticing), and the host is told how it
// ended, even when the host's own handling of it throws. An answer in a content coding (gzip, ...)
// is passed through untouched, unread. It decides nothing. The head's headers: response-headers.ts.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { Dispatcher } from "undici";
import type { RedispatchCause } from "@meridian/lb-core";
import type { Limits } from "@meridian/protocol";
import { PoolQueueEntry } from "./pool-queue-entry";
import { bodyLength, type ParsedInference } from "./request";
import { passedRequestHeaders } from "./request-headers";
import { MAX_PARTIAL_EVENT_BYTES, maxReplyChars, SseObserver } from "./sse";
import { UnusedBodyDrain } from "./unused-body";
import { sendRest } from "./unread-response";

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
  /** The limits in force: a client's write stall is held to the upstream's body timeout. */
  readonly config: { readonly limits: Pick<Limits, "bodyTimeoutMs" | "maxPromptTokens"> };
  /** Where a fault of the LB's own while handling a response is logged. */
  readonly logger: Pick<Logger, "error">;
  /** Headers arrived (status ≥ 200). False when the exchange was abandoned (retried elsewhere). */
  onHeaders(job: J, exchange: UpstreamExchange<J>): boolean;
  /** The client is about to get the response head. */
  writeClientHead(job: J, exchange: UpstreamExchange<J>): void;
  onEnd(job: J, exchange: UpstreamExchange<J>): void;
  /** The upstream failed; `clientSawBytes` when the head already went to the client. */
  onFailure(job: J, exchange: UpstreamExchange<J>, error: unknown, clientSawBytes: boolean): void;
  /** The first response byte arrived (the first-byte deadline is met). */
  onFirstByte(job: J, exchange: UpstreamExchange<J>): void;
  /** The request got its connection and leaves now (it may have waited in the target's pool). */
  onRequestLeft(job: J, exchange: UpstreamExchange<J>): void;
}

/** The LB gave up waiting for a target's first byte: its deadline passed, or the replica turned
 * unhealthy. Nothing had reached the client, so the request may go elsewhere. */
export class UpstreamStallError extends Error {
  override name = "UpstreamStallError";
  constructor(
    message: string,
    readonly reason: "first_byte_deadline" | "replica_unhealthy" | "peer_unhealthy" | "timeout",
  ) {
    super(message);
  }
}

/** The largest non-streamed body held whole. Held, it leaves in one write with its exact length and
 * is read for usage; a completion or an embedding is KBs to a few MiB. Past 16 MiB (a batch of large
 * embeddings, or an engine gone wrong) it is passed through instead: holding it would let one answer
 * grow the LB's memory without bound, and past V8's string limit (~512 MiB) reading it throws. */
export const MAX_BUFFERED_BODY_BYTES = 16 * 1024 * 1024;

export class UpstreamExchange<J extends ExchangeJob> implements Dispatcher.DispatchHandler {
  status = 0;
  ok = false;
  streaming = false;
  headers: Record<string, string | string[] | undefined> = {};
  observer: SseObserver | null = null;
  /** A non-streamed body, held to go out in one write (and be read for usage) at its end. */
  readonly buffered: Buffer[] = [];
  /** The non-streamed body outgrew MAX_BUFFERED_BODY_BYTES, or the answer came in a content coding:
   * it is passed through as it comes, with no length in the client's head, and not read for usage. */
  bodyPassedThrough = false;
  /** The answer came in a content coding despite the LB's `accept-encoding: identity` (a reverse
   * proxy in front of the engine that compresses anyway). It reaches the client untouched, its
   * Content-Encoding with it (response-headers.ts), as every HTTP client decodes by that header. It
   * is not decoded here: that would put a decompressor (and a zip bomb's output) on the LB's response
   * path for a case a compliant server never creates; the cost is that the LB reads no usage from it,
   * and a stream keeps the usage event the LB asked for on the client's behalf. */
  contentEncoded = false;
  /** performance.now() when the request was handed to the pool. */
  readonly dispatchedAt = performance.now();
  firstByteAt: number | null = null;
  firstContentAt: number | null = null;
  private bufferedBytes = 0;
  /** The held part of a body past MAX_BUFFERED_BODY_BYTES not yet written (flushBacklog). */
  private backlog: Buffer[] = [];
  private deadlineTimer: NodeJS.Timeout | null = null;
  /** Runs while the client's socket is full and the upstream paused for it (see awaitDrain). */
  private stallTimer: NodeJS.Timeout | null = null;
  private headWritten = false;
  private corked = false;
  /** Set once this exchange no longer drives the job (retried elsewhere, failed, client gone). */
  private abandoned = false;
  /** The host heard of a failure of this exchange (it hears of one at most once). */
  private failureReported = false;
  private controller: Dispatcher.DispatchController | null = null;
  /** What the pool holds of this request until it gets a connection (null once it has one). */
  private queued: PoolQueueEntry | null = null;
  /** The body of an answer not used, read on only to free its connection (unused-body.ts). */
  private unused: UnusedBodyDrain | null = null;

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
    this.settle();
    this.reportFailure(reason, false);
  }

  /** Whether the client's stream can be ended with an SSE error event of the LB's: an event stream
   * the LB reads, not one passed through encoded (an event glued onto gzip bytes would corrupt it). */
  get endsWithEvent(): boolean {
    return this.observer !== null;
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

  /** This exchange stops driving its job: its timers go with it. */
  private settle(): void {
    this.abandoned = true;
    this.clearDeadline();
    if (this.stallTimer !== null) clearTimeout(this.stallTimer);
    this.stallTimer = null;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    this.queued = null;
    if (!this.abandoned) this.host.onRequestLeft(this.job, this);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (statusCode < 200) return; // 1xx informational
    try {
      this.start(controller, statusCode, headers);
    } catch (error) {
      this.fault("response start", error);
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.unused?.data(chunk);
    if (this.abandoned) return;
    try {
      this.receive(controller, chunk);
    } catch (error) {
      this.fault("response data", error);
    }
  }

  onResponseEnd(): void {
    this.unused?.end();
    if (this.abandoned) return;
    this.settle();
    try {
      this.end();
    } catch (error) {
      this.fault("response end", error);
    }
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.unused?.end();
    if (this.abandoned) return;
    this.settle();
    this.reportFailure(error, this.headWritten);
  }

  private start(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    this.status = statusCode;
    this.ok = statusCode >= 200 && statusCode < 300;
    this.headers = headers;
    const contentType = headers["content-type"];
    this.streaming = this.ok && typeof contentType === "string" && contentType.includes("text/event-stream");
    this.contentEncoded = isContentEncoded(headers["content-encoding"]);
    if (this.job.clientGone) {
      this.settle();
      const reason = new Error("client closed the request");
      controller.abort(reason);
      this.reportFailure(reason, false);
      return;
    }
    if (!this.host.onHeaders(this.job, this)) {
      // The answer is not used (the request moves on, after a 502, 503 or 504): a short body is read
      // on to free its connection for the next request, a long or slow one is cut (unused-body.ts).
      this.settle();
      this.unused = new UnusedBodyDrain(controller, headers);
      return;
    }
    // Encoded bytes cannot be read for events: passed through as they come (receiveBody).
    if (this.contentEncoded) this.bodyPassedThrough = true;
    else if (this.streaming) {
      this.observer = new SseObserver({
        // Usage was asked for on the client's behalf (of a peer LB too, which then passes it on, so
        // that this LB counts the client key's tokens): the client gets it only if it asked.
        stripUsage: this.job.request.stream && !this.job.request.clientWantsUsage,
        onFirstContent: () => {
          this.firstContentAt = performance.now();
        },
        maxReplyChars: maxReplyChars(this.host.config.limits.maxPromptTokens),
      });
    }
  }

  private receive(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.firstByteAt === null) {
      this.firstByteAt = performance.now();
      this.clearDeadline();
      this.host.onFirstByte(this.job, this);
    }
    if (!this.observer) return this.receiveBody(controller, chunk);
    const out = this.observer.push(chunk);
    // The head goes out with the first whole event, not the first byte: a stream that fails while
    // its first event is still partial has sent the client nothing, and can be retried elsewhere.
    if (out.length > 0) {
      this.writeHead();
      this.forward(controller, out);
    }
    if (this.observer.tooLarge) {
      // Not SSE, or an event without end: the stream is cut (with the LB's error event) rather than
      // held without bound.
      this.settle();
      const error = new Error(`the upstream sent an SSE event over ${MAX_PARTIAL_EVENT_BYTES} bytes without ending it`);
      controller.abort(error);
      this.reportFailure(error, this.headWritten);
    }
  }

  /** A non-stream body (a JSON completion, an embedding, an error): held to go out in one write with
   * its length, unless it outgrows the cap; then what was held goes out and the rest follows as it
   * comes, under backpressure like a stream. */
  private receiveBody(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.bodyPassedThrough) {
      this.writeHead();
      if (this.backlog.length > 0) this.backlog.push(chunk);
      else this.forward(controller, chunk);
      return;
    }
    this.buffered.push(chunk);
    this.bufferedBytes += chunk.length;
    if (this.bufferedBytes <= MAX_BUFFERED_BODY_BYTES) return;
    this.bodyPassedThrough = true;
    this.writeHead();
    this.backlog = this.buffered.splice(0);
    this.bufferedBytes = 0;
    this.flushBacklog(controller);
  }

  /** Writes the held part of a passed-through body while the client's socket takes it. Written in
   * one burst, a client reading it steadily but slowly would make no 'drain' until all of it was
   * gone, and be taken for one that stopped reading (the write-stall timer). */
  private flushBacklog(controller: Dispatcher.DispatchController): void {
    while (this.backlog.length > 0) {
      const part = this.backlog.shift() as Buffer;
      if (!this.job.res.write(part)) return this.awaitDrain(controller);
    }
  }

  private end(): void {
    this.writeHead();
    // What the client has not been sent yet: a stream's last bytes, a passed-through body's backlog, or
    // the whole answer the LB held. It goes out as the client takes it, and a client that takes none
    // of it for limits.bodyTimeoutMs is dropped (the upstream is done: nothing is left to pause).
    const rest = this.observer ? [this.observer.end()] : this.bodyPassedThrough ? this.backlog.splice(0) : this.buffered;
    sendRest(this.job.res, this.job.req.socket, rest, this.host.config.limits.bodyTimeoutMs);
    this.host.onEnd(this.job, this);
  }

  /** Writes to the client, pausing the upstream while the client's socket is full. */
  private forward(controller: Dispatcher.DispatchController, out: Buffer): void {
    const res = this.job.res;
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
    if (!res.write(out)) this.awaitDrain(controller);
  }

  /** Pauses the upstream until the client's socket drains. undici's body timeout does not run while
   * paused, and Node's server has no write timeout: a client that never reads would hold the engine's
   * connection, a connection slot of the replica and its in-flight count forever (128 such clients
   * take a replica). It gets as long as the LB grants a silent upstream (limits.bodyTimeoutMs), then
   * is dropped as a client that left. */
  private awaitDrain(controller: Dispatcher.DispatchController): void {
    controller.pause();
    if (this.stallTimer !== null) return;
    const ms = this.host.config.limits.bodyTimeoutMs;
    this.stallTimer = setTimeout(() => this.clientStalled(ms), ms);
    this.job.res.once("drain", () => {
      if (this.stallTimer !== null) clearTimeout(this.stallTimer);
      this.stallTimer = null;
      // A held body's backlog goes first; blocked again, it waits for the next drain.
      this.flushBacklog(controller);
      if (this.stallTimer === null) controller.resume();
    });
  }

  private clientStalled(ms: number): void {
    this.stallTimer = null;
    if (this.abandoned) return;
    // The host then finishes the request as one whose client left (499), releasing what it held.
    this.job.clientGone = true;
    this.job.res.destroy();
    this.abort(new Error(`the client read nothing for ${ms} ms`));
  }

  private reportFailure(error: unknown, clientSawBytes: boolean): void {
    if (this.failureReported) return;
    this.failureReported = true;
    try {
      this.host.onFailure(this.job, this, error, clientSawBytes);
    } catch (thrown) {
      this.logFault("failure", thrown);
      // Nothing is left to finish the job; at least the client is not left waiting.
      this.job.res.destroy();
    }
  }

  /** Something threw while this exchange drove its job: a bug of the LB's own (a host callback, a
   * header Node refused), not the upstream's doing. undici would only destroy the connection and
   * tell an exchange that, abandoned, no longer listens: the job would never finish, and its
   * replica's in-flight count and queued tokens would stay raised (a drain would wait forever). So it
   * is logged, the upstream request stopped, and the host told of a failure, which finishes the job. */
  private fault(where: string, error: unknown): void {
    this.logFault(where, error);
    this.settle();
    this.controller?.abort(error instanceof Error ? error : new Error(String(error)));
    if (this.failureReported) this.job.res.destroy();
    else this.reportFailure(error, this.headWritten);
  }

  private logFault(where: string, error: unknown): void {
    this.host.logger.error({ err: error, target: this.target.id, where }, "the LB failed handling an upstream response");
  }

  private writeHead(): void {
    if (this.headWritten) return;
    this.headWritten = true;
    this.host.writeClientHead(this.job, this);
  }
}

/** Sends the job's body to the target through the exchange. A replica gets the body with usage
 * requested on streams; a peer LB gets the client's original body (it makes its own usage decision). */
export function dispatchExchange<J extends ExchangeJob>(exchange: UpstreamExchange<J>, body: Buffer | Buffer[], headers: Record<string, string>): void {
  const { job, target } = exchange;
  const parts = Array.isArray(body) ? body : [body];
  // The LB reads what it forwards (SSE events, usage): without Accept-Encoding "any content coding is
  // acceptable" (RFC 9110 §12.5.3), and a compressing proxy in front of an engine would gzip it.
  const out: Record<string, string> = {
    ...passedRequestHeaders(job.req.headers, target.kind === "replica"),
    "content-type": "application/json",
    "accept-encoding": "identity",
    ...headers,
  };
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

/** A Content-Encoding other than identity: the body is not the bytes the LB could read. */
function isContentEncoded(value: string | string[] | undefined): boolean {
  const codings = (Array.isArray(value) ? value.join(",") : (value ?? "")).split(",").map((coding) => coding.trim().toLowerCase());
  return codings.some((coding) => coding !== "" && coding !== "identity");
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
 * unhealthy (it will not answer), limits.headersTimeoutMs passed (the LB's watch or the pool stopped
 * waiting), or its first byte is late (it may still answer). */
export function redispatchCause(error: unknown): RedispatchCause {
  if (error instanceof UpstreamStallError) {
    if (error.reason === "replica_unhealthy" || error.reason === "peer_unhealthy") return "unhealthy";
    return error.reason === "timeout" ? "timeout" : "deadline";
  }
  return codeOf(error) === "UND_ERR_HEADERS_TIMEOUT" ? "timeout" : "deadline";
}

/** What the metric and the log call the move of a stalled request (meridian_lb_redispatched_requests_total's
 * reason), or null for a failure that is not a stall. */
export type RedispatchReason = "first_byte_deadline" | "headers_timeout" | "replica_unhealthy" | "peer_unhealthy";

export function redispatchReason(error: unknown): RedispatchReason | null {
  if (error instanceof UpstreamStallError) return error.reason === "timeout" ? "headers_timeout" : error.reason;
  return codeOf(error) === "UND_ERR_HEADERS_TIMEOUT" ? "headers_timeout" : null;
}

/** The target took the request but sent no response head in time: the LB's first-byte watch gave
 * up, or the pool's headersTimeout passed (limits.headersTimeoutMs, the watch's own cap, so it fires
 * first only for a request dispatched under older, shorter limits). Slow, not gone. */
export function isStall(error: unknown): boolean {
  return error instanceof UpstreamStallError || codeOf(error) === "UND_ERR_HEADERS_TIMEOUT";
}
