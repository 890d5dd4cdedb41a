// The regional load balancer's orchestration: the I/O shell around one LbCore (@meridian/lb-core).
// It turns HTTP requests into core tickets, acts on the placements the core returns (send to a
// replica, forward to a peer, hold, refuse), feeds the core what probes, scrapes and peer polls find,
// arms the one timer the hold queue needs, and emits metrics and telemetry. Every decision about a
// request is the core's; this file and its helpers only do I/O.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { failures, LbCore, type LearnInstruction, type Placement, type PlacementLogEntry } from "@meridian/lb-core";
import { LB_STATE_SCHEMA, PEER_REPORT_SCHEMA, type LbConfig, type LbState, type PeerReport } from "@meridian/protocol";
import type { InferenceClient } from "./client-entrance";
import { onSocketClose } from "./client-socket";
import { coreNow } from "./core-clock";
import { endedStatus, recordCompletion, responseFacts, type CompletionSinks, type ResponseFacts } from "./completion";
import { endStreamWithError, HttpError, httpErrorOf, sendError } from "./errors";
import { ProxyMetrics, targetLabel } from "./metrics";
import { metricsSourcesOf } from "./metrics-sources";
import { ModelCatalog, type ModelCounts, modelsOf } from "./models";
import { forwardHeaders, type PeerObservation } from "./peers";
import type { ReplicaObservation } from "./replicas";
import { nextTurnKeys, readInference, type InferenceKind, type ParsedInference } from "./request";
import type { ProcessSettings } from "./settings";
import { TargetRuntimes } from "./target-runtimes";
import { TelemetryLog } from "./telemetry";
import { HeadExpiryTimer } from "./head-expiry-timer";
import { InFlight } from "./in-flight";
import { newJob, type Job } from "./job";
import { clientResponseHeaders } from "./response-headers";
import { recheckClient, recheckInFlight, takeRevokedHeld } from "./revoked-keys";
import {
  dispatchExchange,
  isConnectionFailure,
  isStall,
  redispatchCause,
  redispatchReason,
  UpstreamExchange,
  type ExchangeHost,
  type UpstreamTarget,
} from "./upstream";

export interface BalancerOptions {
  config: LbConfig;
  settings: ProcessSettings;
  /** This LB's credentials: its peer credentials are presented to peers (polls, forwarded requests). */
  credentials: { peerCredentials(): string[] };
  logger: Logger;
  /** Seed for tie-breaking and random policies; fixed in tests for reproducibility. */
  seed?: number;
  /** Observes every placement decision (the scenario tests compare these with the simulator's). */
  onPlacement?: (entry: PlacementLogEntry) => void;
}

export class Balancer implements ExchangeHost<Job> {
  readonly core: LbCore<Job>;
  readonly telemetry: TelemetryLog;
  readonly metrics: ProxyMetrics;
  readonly startedAt = Date.now();
  /** When each model was first served (the OpenAI `created` of /v1/models). */
  readonly modelCatalog = new ModelCatalog();
  private readonly targets: TargetRuntimes;
  private readonly completionSinks: CompletionSinks;
  readonly logger: Logger;
  private readonly settings: ProcessSettings;
  private readonly expiry = new HeadExpiryTimer();
  private closed = false;
  /** Set by a graceful drain (SIGTERM): new requests are refused, in-flight ones finish. */
  draining = false;
  /** Requests admitted and not yet answered to the end, and their first-byte deadlines. (A drain waits
   * for the server's OpenResponses, which also holds requests still sending their body and answers
   * still being flushed.) */
  readonly inFlight: InFlight<Job>;

  constructor(options: BalancerOptions) {
    this.settings = options.settings;
    this.logger = options.logger;
    this.core = new LbCore<Job>({
      config: options.config,
      seed: options.seed ?? Date.now() & 0x7fffffff,
      peerPollIntervalMs: this.settings.peerPollIntervalMs,
      ...(options.onPlacement ? { onPlacement: options.onPlacement } : {}),
    });
    this.modelCatalog.observe(modelsOf(options.config), this.startedAt);
    this.telemetry = new TelemetryLog(this.settings.telemetryBufferSize);
    this.targets = new TargetRuntimes(this.settings, () => options.credentials.peerCredentials(), {
      region: () => this.core.config.region,
      snapshotKeys: () => this.core.snapshotKeysWanted(this.settings.peerSnapshotMaxKeys),
      replica: (id, observation) => this.onReplicaObservation(id, observation),
      peer: (id, observation) => this.onPeerObservation(id, observation),
    });
    this.metrics = new ProxyMetrics(metricsSourcesOf(this.core));
    this.completionSinks = {
      core: this.core as LbCore<unknown>,
      metrics: this.metrics,
      telemetry: this.telemetry,
      learnLater: (instruction) => this.learnLater(instruction),
    };
    this.inFlight = new InFlight<Job>({
      core: this.core,
      metrics: this.metrics,
      logger: this.logger,
      canRetry: (job) => this.canRetry(job),
      admitted: (job) => job.client.admits(this.config),
      headersTimeoutMs: () => this.config.limits.headersTimeoutMs,
    });
  }

  get config(): LbConfig {
    return this.core.config;
  }

  // ------------------------------------------------------------------ lifecycle and config

  /** Starts probes and peer polls; resolves once each replica and peer answered once (or the warmup timeout). */
  async start(): Promise<void> {
    const initial = { addedReplicas: [...this.core.replicas.values()], removedReplicas: [], addedPeers: [...this.core.peers.values()], removedPeers: [] };
    await this.targets.apply(this.core.config, initial, { initial: true, withinMs: this.settings.warmupTimeoutMs });
  }

  /** Applies a validated config: weights and policy take effect for the next request. */
  applyConfig(next: LbConfig): Promise<void> {
    const capBefore = this.config.limits.headersTimeoutMs;
    // The core first: a config it cannot run throws before anything here changes.
    const changes = this.core.applyConfig(next);
    if (next.limits.headersTimeoutMs !== capBefore) this.inFlight.capChanged();
    this.modelCatalog.observe(modelsOf(next), Date.now());
    const started = this.targets.apply(next, changes, { initial: false });
    // Before the drain may place them (with the targets of this config started): held requests of a
    // client key this config revoked are refused; requests in flight finish.
    for (const { job, refusal } of takeRevokedHeld(this.core, next)) this.failJob(job, refusal, "invalid_api_key");
    recheckInFlight(this.inFlight.list(), next);
    this.drain();
    return started;
  }

  /** Scrapes every replica now; resolves when all answered (or failed). With pollPeersNow(), for tests
   * that step a script (the periodic timers keep running regardless). */
  async scrapeNow(): Promise<void> {
    await Promise.all([...this.targets.replicas.values()].map((r) => r.scrapeMetrics()));
  }

  /** Polls every peer now; resolves when all answered (or failed). */
  async pollPeersNow(): Promise<void> {
    await Promise.all([...this.targets.peers.values()].map((p) => p.poll()));
  }

  /** Stops at once: held requests get 503 shutting_down, streams in flight end with an SSE error
   * event, other requests in flight 503. */
  async close(): Promise<void> {
    this.beginDrain();
    this.closed = true;
    this.expiry.clear();
    for (const job of this.inFlight.list()) {
      this.cut(job, httpErrorOf(failures.shuttingDown()), "shutting_down");
      job.exchange?.abort(new Error("the load balancer is shutting down")); // the job is done: ignored
    }
    this.telemetry.close();
    await this.targets.close();
  }

  /** A graceful drain begins: new requests are refused with 503 shutting_down, held ones too (they
   * have not started, and another LB will serve them sooner than one going away); requests in flight
   * go on. Probes, scrapes and retries keep working meanwhile. */
  beginDrain(): void {
    if (this.draining) return;
    this.draining = true;
    for (const { ticket, placement } of this.core.shutdown(coreNow())) this.act(ticket.owner, placement);
  }

  // ------------------------------------------------------------------ what probes, scrapes and polls found

  private onReplicaObservation(id: string, observation: ReplicaObservation): void {
    if (observation.kind === "scrape") {
      if (observation.ok) {
        if (this.core.scrapeSucceeded(id, observation.load, coreNow(), observation.cache)) {
          this.metrics.cache.cleared(id, "engine-restart");
          this.logger.warn({ replica: id }, "engine restarted: its part of the prefix index is cleared");
        }
      } else this.core.scrapeFailed(id, observation.error);
    } else if (observation.ok) {
      if (this.core.probeSucceeded(id, observation.sampleMs) === "recovered") this.logger.info({ replica: id }, "replica healthy again");
    } else if (this.core.probeFailed(id) === "unhealthy") {
      this.logger.warn({ replica: id, error: observation.error }, "replica failed its health probes");
      this.inFlight.targetUnhealthy("replica", id);
    }
    this.drain();
  }

  private onPeerObservation(id: string, observation: PeerObservation): void {
    if (!observation.ok) {
      if (this.core.peerPollFailed(id, observation.error)) this.logger.warn({ peer: id, error: observation.error }, "peer poll failed");
      this.inFlight.peerPollFailed(id);
      return;
    }
    if (this.core.peers.get(id)?.lastError) this.logger.info({ peer: id }, "peer reachable again");
    const { schema: _schema, ...report } = observation.report;
    this.core.peerReported(id, report, observation.rttMs, coreNow());
    this.drain();
  }

  // ------------------------------------------------------------------ request entry

  async handleInference(kind: InferenceKind, path: string, req: IncomingMessage, res: ServerResponse, client: InferenceClient): Promise<void> {
    const arrival = performance.now();
    if (this.draining) {
      req.resume();
      this.reject(res, httpErrorOf(failures.shuttingDown()), "shutting_down");
      return;
    }
    let request: ParsedInference;
    // The core's reason for a prompt it refused while the body was read (prompt_too_long).
    let refusedAs: string | null = null;
    try {
      request = await readInference(kind, req, this.config, (size) => {
        const refusal = this.core.checkPromptTokens(size);
        if (!refusal) return;
        refusedAs = refusal.reason;
        throw httpErrorOf(refusal);
      });
    } catch (error) {
      this.reject(res, error, refusedAs ?? (error instanceof HttpError && error.status === 408 ? "body_timeout" : "bad_request"));
      return;
    }
    const unknownModel = this.core.checkModel(request.model);
    if (unknownModel) return this.reject(res, httpErrorOf(unknownModel), unknownModel.reason);
    // A config pushed while the body was read may have revoked the client's key.
    const revoked = client.recheck(this.config);
    if (revoked) return this.reject(res, revoked, "invalid_api_key");
    const job = newJob({ kind, path, req, res, request, client, arrival });
    job.ticket = this.core.admit(
      job,
      {
        keys: request.keys,
        sessionKey: request.sessionKey,
        model: request.model,
        hop: client.hop,
        ...(client.clientRegion !== null ? { clientRegion: client.clientRegion } : {}),
        ...(client.entry !== null ? { entry: client.entry } : {}),
        ...request.size,
        // As the config in force says now: a push may have dropped the key while the body arrived.
        clientKeyed: client.keyedUnder(this.config),
        nextTurnKeys: (reply, toolCalls) => nextTurnKeys(request, reply, toolCalls),
      },
      coreNow(),
    );
    this.inFlight.add(job);
    const onClientClose = (): void => {
      if (res.writableFinished || job.done || job.clientGone) return;
      // The client went away: stop the upstream work and free its slot.
      job.clientGone = true;
      job.exchange?.abort(new Error("client closed the request"));
      if (this.core.cancel(job.ticket)) {
        this.armExpiryTimer();
        this.finish(job, 499, null, "client closed the request while queued");
      }
    };
    res.on("close", onClientClose);
    // A pipelined request learns of its client's hang-up from the socket (client-socket.ts); on a
    // keep-alive connection the socket outlives the response.
    res.once("close", onSocketClose(req.socket, onClientClose));
    this.act(job, this.core.route(job.ticket, coreNow()));
    this.armExpiryTimer();
  }

  private reject(res: ServerResponse, error: unknown, reason: string): void {
    const httpError = error instanceof HttpError ? error : new HttpError(500, "internal error", "server_error", "internal_error");
    if (!(error instanceof HttpError)) {
      const code = (error as { code?: unknown } | null)?.code;
      // A client resetting its own connection mid-body is routine, not an LB fault.
      if (code === "ECONNRESET" || code === "ERR_STREAM_PREMATURE_CLOSE") this.logger.debug({ err: error }, "client reset while sending its request");
      else this.logger.error({ err: error }, "unexpected error handling a request");
    }
    this.metrics.rejected.inc({ reason });
    this.metrics.requests.inc({ policy: this.config.policy, replica: "none", status: String(httpError.status) });
    // A refused body may not have been read to its end: the connection cannot carry another request.
    if (httpError.status === 413 || httpError.status === 408 || this.draining) res.setHeader("connection", "close");
    sendError(res, httpError);
  }

  // ------------------------------------------------------------------ acting on placements

  /** Places what the core let go from its hold queue; runs after anything that may free capacity. */
  private drain(): void {
    if (this.closed) return;
    for (const { ticket, placement } of this.core.drain(coreNow())) this.act(ticket.owner, placement);
    // Then requests stalled on their target (past their first-byte deadline, or on a target that
    // turned unhealthy, with nowhere to go then): held ones have no target at all and go first.
    this.inFlight.recheckStalled();
    this.armExpiryTimer();
  }

  /** One timer for the whole hold queue, at the head's expiry. */
  private armExpiryTimer(): void {
    this.expiry.arm(this.closed ? null : this.core.nextExpiryAt(), coreNow(), () => this.drain());
  }

  private act(job: Job, placement: Placement): void {
    if (job.done) return;
    switch (placement.kind) {
      case "hold":
        // A retry that found every replica full while the LB drains: it would wait past the drain.
        if (this.draining && this.core.cancel(job.ticket)) this.failJob(job, httpErrorOf(failures.shuttingDown()), "shutting_down");
        return;
      case "fail":
        if (placement.failure.cause !== undefined) this.logger.error({ err: placement.failure.cause }, "routing failed");
        return this.failJob(job, httpErrorOf(placement.failure), placement.failure.reason);
      case "peer": {
        const peer = this.targets.peers.get(placement.peerId);
        if (!peer) return this.failJob(job, new HttpError(502, `peer ${placement.peerId} is gone`, "server_error", "upstream_error"), "upstream_error");
        this.metrics.forwarded.inc({ peer: peer.id });
        const headers = forwardHeaders(job.ticket.hop + 1, job.ticket.clientKeyed, job.ticket.policy, peer.credential());
        return this.dispatch(job, { kind: "peer", id: peer.id, pool: peer.pool, path: peer.basePath + job.path }, headers);
      }
      case "replica": {
        const replica = this.targets.replicas.get(placement.replicaId);
        if (!replica)
          return this.failJob(job, new HttpError(502, `replica ${placement.replicaId} is gone`, "server_error", "upstream_error"), "upstream_error");
        return this.dispatch(job, { kind: "replica", id: replica.id, pool: replica.pool, path: replica.basePath + job.path }, {});
      }
    }
  }

  private dispatch(job: Job, target: UpstreamTarget, headers: Record<string, string>): void {
    const exchange = new UpstreamExchange<Job>(this, job, target);
    job.exchange = exchange;
    // Right after the placement, while the replica's in-flight tokens are those this request joined.
    const plan = this.core.firstByteDeadline(job.ticket, { stream: job.request.stream, maxOutputTokens: job.request.maxOutputTokens });
    job.plan = plan;
    dispatchExchange(exchange, job.body, { "x-meridian-src-region": this.config.region, ...headers });
    this.inFlight.watch(job, exchange, plan);
  }

  private canRetry(job: Job): boolean {
    return this.core.mayRetry(job.ticket) && !job.res.headersSent && !job.clientGone;
  }

  /** `error`: the failure that ended `exchange`; a stall says why the request left its target
   * (lb-core's redispatch cause, which places it, and the move the metric counts once placed). */
  private retry(job: Job, exchange: UpstreamExchange<Job>, reason: string, error?: unknown): void {
    const { target } = exchange;
    // A retry is a new dispatch: a key revoked since is refused, and counted so, not as a target's failure.
    const refusal = recheckClient(job, this.config);
    if (refusal !== null) return this.failJob(Object.assign(job, { exchange: null }), refusal, "invalid_api_key");
    this.metrics.retries.inc({ replica: targetLabel(target) });
    this.logger.debug({ target: target.id, reason }, "retrying on another target");
    const stalled = isStall(error);
    const placement = this.core.retry(job.ticket, coreNow(), stalled ? redispatchCause(error) : undefined);
    const moved = redispatchReason(error);
    if (moved !== null && placement.kind !== "fail" && !(placement.kind === "hold" && this.draining)) this.inFlight.moved(exchange, moved);
    this.act(job, placement);
    this.armExpiryTimer();
  }

  // ------------------------------------------------------------------ the exchange's events

  onHeaders(job: Job, exchange: UpstreamExchange<Job>): boolean {
    // 502/503/504 move the request; a 500 is the engine's answer to this body and goes to the client.
    if (this.core.mayRetryAfterStatus(job.ticket, exchange.status) && this.canRetry(job)) {
      this.retry(job, exchange, `upstream status ${exchange.status}`);
      return false;
    }
    // A stream's headers leave the engine before its prefill (vLLM and SGLang send them at once); its
    // first byte is the first token, when the engine holds the prompt: the core hears of it then, as in
    // the simulator. Learned sooner, a request sharing the prefix meanwhile reads a miss as lost cache.
    if (!exchange.streaming) this.responded(job, exchange.status);
    return true;
  }

  /** The target has answered (lb-core's headersReceived): its prompt is learned, its prefill over. */
  private responded(job: Job, status: number): void {
    const learn = this.core.headersReceived(job.ticket, status, coreNow());
    if (learn) this.learnLater(learn);
  }

  writeClientHead(job: Job, exchange: UpstreamExchange<Job>): void {
    // While draining, no connection is kept for a next request.
    job.res.writeHead(exchange.status, clientResponseHeaders(exchange, this.config.lbId, this.draining));
  }

  onRequestLeft(job: Job, exchange: UpstreamExchange<Job>): void {
    if (exchange.target.kind === "peer") this.core.forwardLeft(job.ticket, coreNow());
  }

  onFirstByte(job: Job, exchange: UpstreamExchange<Job>): void {
    if (exchange.streaming) this.responded(job, exchange.status);
    // A streamed first byte is the first token: it teaches the replica's time to first byte. A
    // non-streamed one comes with the whole reply and would teach decode time as prefill.
    if (exchange.ok && exchange.streaming && job.plan && exchange.firstByteAt !== null) {
      this.core.firstByteObserved(job.ticket, job.plan, exchange.firstByteAt - exchange.dispatchedAt);
    }
  }

  onEnd(job: Job, exchange: UpstreamExchange<Job>): void {
    const facts = responseFacts(exchange);
    const { status, error } = endedStatus(exchange);
    if (error === null && exchange.observer && exchange.firstByteAt !== null) {
      this.core.decodeObserved(job.ticket, exchange.observer.decodeSample(), performance.now() - exchange.firstByteAt);
    }
    this.finish(job, status, facts, error);
  }

  onFailure(job: Job, exchange: UpstreamExchange<Job>, error: unknown, clientSawBytes: boolean): void {
    if (job.done) return;
    const { target } = exchange;
    const message = error instanceof Error ? error.message : String(error);
    if (job.clientGone) {
      this.finish(job, 499, null, "client closed the request");
      return;
    }
    // A failure on the URL a re-pointed replica had says nothing of the engine configured there now.
    if (target.kind === "replica" && isConnectionFailure(error) && this.core.onCurrentTarget(job.ticket) && this.core.markUnreachable(target.id)) {
      // While this LB shuts down, its engines may be stopping too (a fleet stopped as one): no alarm.
      if (this.draining) this.logger.info({ replica: target.id, reason: message }, "replica unreachable while this LB shuts down");
      else this.logger.warn({ replica: target.id, reason: message }, "replica unreachable; excluded until its probe recovers");
      this.inFlight.targetUnhealthy("replica", target.id);
    }
    const stalled = isStall(error);
    // A stalled target is left only for one that can take the request: now, after a late first byte;
    // at all, off a replica that turned unhealthy (lb-core redispatch.ts). Checked before aborting,
    // but the deadline's last resort, at the cap, may find none.
    const cause = stalled ? redispatchCause(error) : undefined;
    if (!clientSawBytes && this.canRetry(job) && (cause === undefined || this.core.canRedispatch(job.ticket, coreNow(), cause))) {
      this.retry(job, exchange, message, error);
      return;
    }
    if (job.res.headersSent) {
      this.cut(
        job,
        new HttpError(502, `upstream ${target.kind} ${target.id} failed mid-stream: ${message}`, "server_error", "upstream_error"),
        "upstream_failed",
      );
      return;
    }
    if (stalled)
      this.failJob(job, new HttpError(504, `upstream ${target.kind} ${target.id}: ${message}`, "server_error", "upstream_timeout"), "upstream_timeout");
    else this.failJob(job, new HttpError(502, `upstream ${target.kind} ${target.id} failed: ${message}`, "server_error", "upstream_error"), "upstream_error");
  }

  // ------------------------------------------------------------------ endings

  /** Ends a request that can no longer be served: with its error if nothing went out yet, else by
   * closing its stream with an SSE error event. */
  private cut(job: Job, error: HttpError, reason: string): void {
    if (!job.res.headersSent) return this.failJob(job, error, reason);
    if (endStreamWithError(job.res, job.exchange?.endsWithEvent === true, error)) this.metrics.cutStreams.inc({ reason });
    this.finish(job, error.status, null, error.message);
  }

  private failJob(job: Job, error: HttpError, reason: string): void {
    if (job.done) return;
    this.metrics.failed(job.exchange?.target ?? null, reason);
    if (!job.clientGone) sendError(job.res, error);
    this.finish(job, error.status, null, error.message);
  }

  private finish(job: Job, status: number, facts: ResponseFacts | null, error: string | null): void {
    if (job.done) return;
    job.done = true;
    this.inFlight.delete(job);
    recordCompletion(this.completionSinks, job.ticket, job.arrival, status, facts, error);
    job.client.onFinished(status, facts?.usage ?? null);
    // A slot may have freed: the head of the hold queue may fit now. At once, as the simulator does,
    // so no peer report can show the freed slot before the queue head has taken it.
    this.drain();
  }

  /** Learning waits a tick: engines send headers with the first token, and indexing an 80 KB prompt
   * should not stand between that token and the client. */
  private learnLater(instruction: LearnInstruction): void {
    setImmediate(() => {
      if (!this.closed) this.core.learn(instruction, coreNow());
    });
  }

  // ------------------------------------------------------------------ snapshots

  state(): LbState {
    return {
      schema: LB_STATE_SCHEMA,
      ...this.core.state(coreNow(), { startedAt: this.startedAt, telemetry: { lastSeq: this.telemetry.latestSeq, bufferSize: this.telemetry.capacity } }),
    };
  }

  /** What GET /admin/peer returns to other LBs. */
  peerReport(snapshotKeys: number): PeerReport {
    return { schema: PEER_REPORT_SCHEMA, ...this.core.peerReport(coreNow(), snapshotKeys) };
  }

  models(): ModelCounts[] {
    return this.core.models();
  }

  flushIndex(): void {
    const now = coreNow();
    this.core.flushIndex(now);
    for (const id of this.core.replicas.keys()) this.metrics.cache.cleared(id, "operator");
  }
}
