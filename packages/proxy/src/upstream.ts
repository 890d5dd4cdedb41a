// The upstream exchange: one request/response with a replica or a peer LB, as an undici dispatch
// handler. SSE events pass through to the client as they arrive (with backpressure), response headers
// reach the client only with the first body bytes (so a failure before that can still be retried
// elsewhere without the client noticing), and the host is told what happened. It decides nothing.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Dispatcher } from "undici";
import { bodyLength, type ParsedInference } from "./request";
import { SseObserver } from "./sse";

/** What the exchange needs of the request it carries. */
export interface ExchangeJob {
  req: IncomingMessage;
  res: ServerResponse;
  request: ParsedInference;
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
}

export class UpstreamExchange<J extends ExchangeJob> implements Dispatcher.DispatchHandler {
  status = 0;
  ok = false;
  streaming = false;
  headers: Record<string, string | string[] | undefined> = {};
  observer: SseObserver | null = null;
  readonly buffered: Buffer[] = [];
  firstByteAt: number | null = null;
  firstContentAt: number | null = null;
  private headWritten = false;
  private corked = false;
  /** Set once this exchange no longer drives the job (retried elsewhere, failed, client gone). */
  private abandoned = false;
  private controller: Dispatcher.DispatchController | null = null;
  private pendingAbort: Error | null = null;

  constructor(
    private readonly host: ExchangeHost<J>,
    readonly job: J,
    readonly target: UpstreamTarget,
  ) {}

  abort(reason: Error): void {
    if (this.controller) this.controller.abort(reason);
    else this.pendingAbort = reason;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.pendingAbort) controller.abort(this.pendingAbort);
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
      const reason = new Error("client closed the request");
      controller.abort(reason);
      this.host.onFailure(this.job, this, reason, false);
      return;
    }
    if (!this.host.onHeaders(this.job, this)) {
      this.abandoned = true;
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
    if (this.firstByteAt === null) this.firstByteAt = performance.now();
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
    this.host.onFailure(this.job, this, error, this.headWritten);
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
  const sent = target.kind === "replica" ? body : job.request.raw.length === 1 ? (job.request.raw[0] as Buffer) : job.request.raw;
  const out: Record<string, string> = { "content-type": "application/json", ...headers };
  // Parts are written back to back; undici needs the total length up front to avoid chunking.
  if (Array.isArray(sent)) out["content-length"] = String(bodyLength(sent));
  const authorization = job.req.headers["authorization"];
  if (typeof authorization === "string") out["authorization"] = authorization;
  const session = job.req.headers["x-session-id"];
  if (typeof session === "string") out["x-session-id"] = session;
  // undici's handler API rather than request(): no Readable per response, chunks go straight to the
  // client socket, and backpressure is pause/resume on the upstream connection. An array of parts is
  // an Iterable body, which undici documents for dispatch (docs/api/Dispatcher.md, DispatchOptions.body)
  // though its .d.ts lists only the single-buffer forms.
  target.pool.dispatch({ method: "POST", path: target.path, headers: out, body: sent as Buffer }, exchange);
}

/** A failure that means the engine is gone (as opposed to a slow or erroring one). */
export function isConnectionFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    code === "ECONNREFUSED" ||
    code === "ECONNRESET" ||
    code === "EHOSTUNREACH" ||
    code === "UND_ERR_CONNECT_TIMEOUT" ||
    code === "UND_ERR_SOCKET" ||
    code === "UND_ERR_HEADERS_TIMEOUT"
  );
}
