// The regional load balancer's core: from a parsed request to a replica (or a peer LB), the upstream
// exchange with SSE passthrough, and the bookkeeping around it (counters, index learning, telemetry,
// metrics). Routing decisions are delegated to @meridian/routing; this file only builds the views
// those functions take and acts on what they return.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Dispatcher } from "undici";
import type { Logger } from "pino";
import {
  createPolicy,
  createRng,
  decideAvailability,
  DEFAULT_BLOCK_CHARS,
  chatBlockKeys,
  continueChatBlockKeys,
  continuePromptBlockKeys,
  isReplicaFull,
  PrefixIndex,
  promptBlockKeys,
  TokenEstimator,
  type BlockKey,
  type CandidateView,
  type Decision,
  type PeerView,
  type Policy,
  type PolicyName,
  type RequestView,
  type Rng,
  type Weights,
} from "@meridian/routing";
import {
  LB_STATE_SCHEMA,
  PEER_REPORT_SCHEMA,
  type LbConfig,
  type LbState,
  type PeerReport,
} from "@meridian/protocol";
import { AdmissionQueue } from "./admission-queue";
import { HttpError, sendError, unavailable } from "./errors";
import { ProxyMetrics } from "./metrics";
import { PeerRuntime } from "./peers";
import { ReplicaRuntime } from "./replicas";
import { bodyLength, parseInference, readBodyParts, upstreamBody, type InferenceKind, type ParsedInference } from "./request";
import { readCompletionBody, SseObserver, type UsageReport } from "./sse";
import { TelemetryLog } from "./telemetry";
import type { ProcessSettings } from "./settings";

/** Response headers copied from upstream; hop-by-hop and length headers are the LB's own business. */
const PASSED_RESPONSE_HEADERS = ["content-type", "cache-control", "x-request-id", "openai-processing-ms", "x-meridian-replica"];

interface Job {
  kind: InferenceKind;
  path: string;
  req: IncomingMessage;
  res: ServerResponse;
  request: ParsedInference;
  view: RequestView;
  body: Buffer | Buffer[];
  hop: number;
  arrival: number;
  arrivalWall: number;
  /** The upstream exchange in progress, to abort when the client goes away. */
  exchange: UpstreamExchange | null;
  /** Replicas / peers that failed this request before any byte reached the client. */
  excluded: Set<string>;
  attempts: number;
  clientGone: boolean;
  done: boolean;
  cancelQueue: (() => void) | null;
  configVersion: number;
  policy: PolicyName;
  weights: Weights;
}

interface Target {
  kind: "replica" | "peer";
  id: string;
  pool: Dispatcher;
  path: string;
  predictedCachedTokens: number;
  replica: ReplicaRuntime | null;
  peer: PeerRuntime | null;
  released: boolean;
  /** Id under which the policy was told of this dispatch (policies with state learn from it). */
  policyRequestId: string | null;
}

export interface BalancerOptions {
  config: LbConfig;
  settings: ProcessSettings;
  token: string | null;
  logger: Logger;
  /** Seed for tie-breaking and random policies; fixed in tests for reproducibility. */
  seed?: number;
}

export class Balancer {
  config: LbConfig;
  readonly replicas = new Map<string, ReplicaRuntime>();
  readonly peers = new Map<string, PeerRuntime>();
  index: PrefixIndex;
  private policyDispatches = 0;
  /** SkyLB snapshot index: which peer LB is believed to hold which blocks. */
  peerIndex: PrefixIndex;
  readonly estimator = new TokenEstimator();
  readonly queue: AdmissionQueue;
  readonly telemetry: TelemetryLog;
  readonly metrics: ProxyMetrics;
  readonly startedAt = Date.now();
  private policy: Policy;
  private readonly rng: Rng;
  private readonly logger: Logger;
  private readonly settings: ProcessSettings;
  private readonly token: string | null;
  private totals = { requests: 0, errors: 0, forwarded: 0 };
  private closed = false;

  constructor(options: BalancerOptions) {
    this.config = options.config;
    this.settings = options.settings;
    this.token = options.token;
    this.logger = options.logger;
    this.rng = createRng(options.seed ?? (Date.now() & 0x7fffffff));
    this.policy = createPolicy(this.config.policy);
    this.index = new PrefixIndex({ capacityBlocks: this.config.index.capacityBlocks, ttlMs: this.config.index.ttlMs });
    this.peerIndex = new PrefixIndex({ capacityBlocks: this.config.index.capacityBlocks, ttlMs: this.config.index.ttlMs });
    this.queue = new AdmissionQueue(() => ({ maxLength: this.config.limits.queueMaxLength, maxWaitMs: this.config.limits.queueMaxWaitMs }));
    this.telemetry = new TelemetryLog(this.settings.telemetryBufferSize);
    this.metrics = new ProxyMetrics({
      replicaGauges: () =>
        [...this.replicas.values()].map((r) => ({
          id: r.id,
          inFlight: r.inFlight,
          queuedTokens: r.queuedTokens + r.peerQueuedTokens,
          rttMs: r.rttMs,
          healthy: r.healthy,
        })),
      queueLength: () => this.queue.length,
      indexRoutes: () => this.index.stats().routes,
    });
  }

  // ------------------------------------------------------------------ lifecycle and config

  /** Starts probes and peer polls; resolves once each replica and peer answered once (or the warmup timeout). */
  async start(): Promise<void> {
    const first = this.syncTargets(this.config);
    await waitAtMost(first, this.settings.warmupTimeoutMs);
  }

  /** Applies a validated config: weights and policy take effect for the next request. */
  applyConfig(next: LbConfig): Promise<void> {
    const previous = this.config;
    this.config = next;
    if (next.policy !== previous.policy) this.policy = createPolicy(next.policy);
    if (next.index.capacityBlocks !== previous.index.capacityBlocks || next.index.ttlMs !== previous.index.ttlMs) {
      this.index = new PrefixIndex({ capacityBlocks: next.index.capacityBlocks, ttlMs: next.index.ttlMs });
      this.peerIndex = new PrefixIndex({ capacityBlocks: next.index.capacityBlocks, ttlMs: next.index.ttlMs });
    }
    const started = this.syncTargets(next);
    this.queue.drain();
    return started;
  }

  private syncTargets(config: LbConfig): Promise<void> {
    const starts: Promise<void>[] = [];
    const wanted = new Map(config.replicas.map((r) => [r.id, r]));
    for (const [id, runtime] of this.replicas) {
      const replicaConfig = wanted.get(id);
      if (!replicaConfig || replicaConfig.url !== runtime.config.url) {
        this.replicas.delete(id);
        this.index.removeReplica(id);
        void runtime.close();
      }
    }
    for (const replicaConfig of config.replicas) {
      const existing = this.replicas.get(replicaConfig.id);
      if (existing) {
        existing.config = replicaConfig;
        existing.updateProbes(config.probes);
        continue;
      }
      const runtime = new ReplicaRuntime(replicaConfig, () => this.config.region, config.probes, config.limits, this.logger, () =>
        this.queue.drain(),
      );
      this.replicas.set(replicaConfig.id, runtime);
      starts.push(runtime.start());
    }
    const wantedPeers = new Map(config.peers.map((p) => [p.id, p]));
    for (const [id, runtime] of this.peers) {
      const peerConfig = wantedPeers.get(id);
      if (!peerConfig || peerConfig.url !== runtime.config.url) {
        this.peers.delete(id);
        this.peerIndex.removeReplica(id);
        void runtime.close();
      }
    }
    for (const peerConfig of config.peers) {
      const existing = this.peers.get(peerConfig.id);
      if (existing) {
        existing.config = peerConfig;
        continue;
      }
      const runtime = new PeerRuntime(
        peerConfig,
        this.token,
        this.settings.peerPollIntervalMs,
        this.settings.peerSnapshotMaxKeys,
        this.logger,
        (peer, report) => this.onPeerReport(peer, report),
        config.limits.connectTimeoutMs,
        config.limits.maxConnectionsPerReplica,
      );
      this.peers.set(peerConfig.id, runtime);
      starts.push(runtime.start());
    }
    this.refreshPeerTokens();
    return Promise.all(starts).then(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.queue.clear();
    this.telemetry.close();
    await Promise.all([...this.replicas.values()].map((r) => r.close()).concat([...this.peers.values()].map((p) => p.close())));
  }

  // ------------------------------------------------------------------ peers

  private onPeerReport(peer: PeerRuntime, report: PeerReport): void {
    if (report.snapshot && report.snapshot.keys.length > 0) {
      this.peerIndex.learnSnapshot(peer.id, report.snapshot.keys, Date.now());
    }
    this.refreshPeerTokens();
    this.queue.drain();
  }

  /** Sums what fresh peer reports say is in flight on each replica. */
  private refreshPeerTokens(): void {
    const now = Date.now();
    for (const replica of this.replicas.values()) replica.peerQueuedTokens = 0;
    for (const peer of this.peers.values()) {
      const report = peer.freshReport(now);
      if (!report) continue;
      for (const load of report.replicas) {
        const replica = this.replicas.get(load.id);
        if (replica) replica.peerQueuedTokens += load.inFlightTokens;
      }
    }
  }

  /** What GET /admin/peer returns to other LBs. */
  peerReport(snapshotKeys: number): PeerReport {
    const now = Date.now();
    const replicas = [...this.replicas.values()].map((r) => ({
      id: r.id,
      inFlight: r.inFlight,
      inFlightTokens: r.queuedTokens,
      full: this.isFull(r, now),
    }));
    const availableReplicas = [...this.replicas.values()].filter(
      (r) => r.config.region === this.config.region && this.isRoutable(r) && !this.isFull(r, now),
    ).length;
    const report: PeerReport = {
      schema: PEER_REPORT_SCHEMA,
      lbId: this.config.lbId,
      region: this.config.region,
      time: now,
      configVersion: this.config.version,
      replicas,
      queueLength: this.queue.length,
      availableReplicas,
    };
    if (snapshotKeys > 0) {
      const keys = this.index.snapshot(snapshotKeys, now);
      report.snapshot = { keys, truncated: keys.length >= snapshotKeys };
    }
    return report;
  }

  // ------------------------------------------------------------------ request entry

  async handleInference(kind: InferenceKind, path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const arrival = performance.now();
    const arrivalWall = Date.now();
    let request: ParsedInference;
    try {
      const raw = await readBodyParts(req, this.config.limits.maxBodyBytes);
      const sessionHeader = req.headers["x-session-id"];
      request = parseInference(kind, raw, typeof sessionHeader === "string" ? sessionHeader : undefined, this.config.sessionKeyBlocks);
    } catch (error) {
      this.reject(res, error, "bad_request");
      return;
    }
    if (request.model !== null && !this.config.replicas.some((r) => r.model === request.model)) {
      this.reject(res, new HttpError(404, `The model \`${request.model}\` does not exist on this load balancer.`, "invalid_request_error", "model_not_found", "model"), "unknown_model");
      return;
    }
    const hopHeader = req.headers["x-meridian-hop"];
    const hop = typeof hopHeader === "string" && Number(hopHeader) >= 1 ? 1 : 0;
    const inputTokens = this.estimator.estimate(request.promptChars);
    const job: Job = {
      kind,
      path,
      req,
      res,
      request,
      view: {
        keys: request.keys,
        inputTokens,
        tokensPerBlock: DEFAULT_BLOCK_CHARS / this.estimator.charsPerToken,
        sessionKey: request.sessionKey,
        clientRegion: this.config.region,
      },
      body: upstreamBody(request),
      hop,
      arrival,
      arrivalWall,
      exchange: null,
      excluded: new Set(),
      attempts: 0,
      clientGone: false,
      done: false,
      cancelQueue: null,
      configVersion: this.config.version,
      policy: this.config.policy,
      weights: this.config.weights,
    };
    res.on("close", () => {
      if (res.writableFinished || job.done) return;
      // The client went away: stop the upstream work and free its slot.
      job.clientGone = true;
      job.exchange?.abort(new Error("client closed the request"));
      if (job.cancelQueue) {
        job.cancelQueue();
        job.cancelQueue = null;
        this.finishJob(job, null, 499, null, "client closed the request while queued");
      }
    });
    this.placeOrQueue(job);
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
    if (httpError.status === 413) res.setHeader("connection", "close");
    sendError(res, httpError);
  }

  // ------------------------------------------------------------------ placement

  private isRoutable(r: ReplicaRuntime): boolean {
    return r.healthy && r.config.state === "enabled";
  }

  private isFull(r: ReplicaRuntime, now: number): boolean {
    const load = r.freshLoad(now);
    return isReplicaFull({ waiting: load ? load.waiting : null, inFlight: r.inFlight, admittedConcurrency: r.concurrencyCap() });
  }

  private candidateView(r: ReplicaRuntime, now: number): CandidateView {
    return {
      id: r.id,
      region: r.config.region,
      rttMs: r.rttMs ?? 0,
      inFlight: r.inFlight,
      queuedTokens: r.queuedTokens + r.peerQueuedTokens,
      scraped: r.freshLoad(now),
      full: this.isFull(r, now),
      healthy: r.healthy,
    };
  }

  private placeOrQueue(job: Job): void {
    if (job.clientGone || job.done) return;
    if (this.tryPlace(job)) return;
    const offer = this.queue.offer({
      enqueuedAt: Date.now(),
      attempt: () => {
        if (job.clientGone || job.done) return true;
        const placed = this.tryPlace(job);
        if (placed) job.cancelQueue = null;
        return placed;
      },
      expire: () => {
        job.cancelQueue = null;
        this.failJob(job, unavailable(`no replica became available within ${this.config.limits.queueMaxWaitMs} ms`, 1, "queue_timeout"), "queue_timeout");
      },
    });
    if (!offer.accepted) {
      this.failJob(job, unavailable(`every replica is busy and the LB queue is full (${this.config.limits.queueMaxLength})`, 1, "queue_full"), "queue_full");
      return;
    }
    job.cancelQueue = offer.cancel;
  }

  /** Routes, forwards, or fails the job now; false when it should wait in the queue. */
  private tryPlace(job: Job): boolean {
    try {
      return this.place(job);
    } catch (error) {
      // Runs from timers and the queue drain too: a routing bug must fail one request, not the LB.
      this.logger.error({ err: error }, "routing failed");
      this.failJob(job, new HttpError(500, "routing failed", "server_error", "routing_error"), "routing_error");
      return true;
    }
  }

  private place(job: Job): boolean {
    const now = Date.now();
    const model = job.request.model;
    const mode = this.config.crossRegion;
    const eligible: ReplicaRuntime[] = [];
    for (const r of this.replicas.values()) {
      if (!this.isRoutable(r) || job.excluded.has(r.id)) continue;
      if (model !== null && r.config.model !== model) continue;
      if (mode === "via-peer" && r.config.region !== this.config.region) continue;
      eligible.push(r);
    }
    const local = eligible.map((r) => this.candidateView(r, now));
    const peers: PeerView[] = [];
    if (mode === "via-peer" && job.hop === 0) {
      for (const peer of this.peers.values()) {
        const report = peer.freshReport(now);
        if (!report || job.excluded.has(peer.id)) continue;
        peers.push({
          id: peer.id,
          region: peer.config.region,
          rttMs: peer.rttMs ?? 0,
          availableReplicas: report.availableReplicas,
          queueLength: report.queueLength,
        });
      }
    }
    if (local.length === 0 && peers.length === 0 && job.excluded.size > 0) {
      // The retry found nowhere else to go: waiting would only hold the client until the queue bound.
      this.failJob(job, new HttpError(502, "the upstream failed and no other replica can take the request", "server_error", "upstream_error"), "upstream_error");
      return true;
    }
    if (local.length === 0 && peers.length === 0) {
      // Nothing to wait for unless a replica that serves this request is merely unhealthy or full.
      const anyServing = [...this.replicas.values()].some((r) => r.config.state === "enabled" && (model === null || r.config.model === model));
      if (!anyServing) {
        this.failJob(job, unavailable("no enabled replica serves this request", 5, "no_replica"), "no_replica");
        return true;
      }
    }
    const availability = decideAvailability({
      mode,
      local,
      peers,
      hop: job.hop,
      tau: this.config.limits.peerQueueTau,
      index: this.peerIndex,
      keys: job.request.keys,
      now,
    });
    if (availability.action === "queue") return false;
    if (availability.action === "forward") {
      const peer = this.peers.get(availability.peerId);
      if (!peer) return false;
      this.dispatch(job, {
        kind: "peer",
        id: peer.id,
        pool: peer.pool,
        path: peer.basePath + job.path,
        predictedCachedTokens: 0,
        replica: null,
        peer,
        released: false,
        policyRequestId: null,
      });
      return true;
    }
    const decision: Decision = this.policy.select(job.view, availability.candidates, { index: this.index, weights: job.weights, rng: this.rng, now });
    const replica = this.replicas.get(decision.choice);
    if (!replica) return false;
    // Policy events (peer routers keep their own state); the LB core is to report these, see
    // packages/routing/src/policies/common.ts (PolicyEvent). One id per dispatch: a retry is new.
    const policyRequestId = String(++this.policyDispatches);
    this.policy.observe?.({ kind: "dispatch", requestId: policyRequestId, replicaId: replica.id, request: job.view, decision, now });
    this.dispatch(job, {
      kind: "replica",
      id: replica.id,
      pool: replica.pool,
      path: replica.basePath + job.path,
      predictedCachedTokens: decision.predictedCachedTokens,
      replica,
      peer: null,
      released: false,
      policyRequestId,
    });
    return true;
  }

  // ------------------------------------------------------------------ upstream exchange

  private dispatch(job: Job, target: Target): void {
    job.attempts++;
    const body = target.kind === "replica" ? job.body : job.request.raw.length === 1 ? (job.request.raw[0] as Buffer) : job.request.raw;
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "x-meridian-src-region": this.config.region,
    };
    // Parts are written back to back; undici needs the total length up front to avoid chunking.
    if (Array.isArray(body)) headers["content-length"] = String(bodyLength(body));
    const authorization = job.req.headers["authorization"];
    if (typeof authorization === "string") headers["authorization"] = authorization;
    const session = job.req.headers["x-session-id"];
    if (typeof session === "string") headers["x-session-id"] = session;
    if (target.kind === "peer") {
      headers["x-meridian-hop"] = String(job.hop + 1);
      this.totals.forwarded++;
      this.metrics.forwarded.inc({ peer: target.id });
    } else if (target.replica) {
      target.replica.inFlight++;
      target.replica.queuedTokens += job.view.inputTokens;
    }
    const exchange = new UpstreamExchange(this, job, target);
    job.exchange = exchange;
    // undici's handler API rather than request(): no Readable per response, chunks go straight to
    // the client socket, and backpressure is pause/resume on the upstream connection.
    target.pool.dispatch(
      {
        method: "POST",
        path: target.path,
        headers,
        // A peer LB gets the client's original body: it makes its own usage decision. An array of
        // parts is an Iterable body, which undici documents for dispatch (docs/api/Dispatcher.md,
        // DispatchOptions.body) though its .d.ts lists only the single-buffer forms.
        body: body as Buffer,
      },
      exchange,
    );
  }

  /** Upstream answered with headers (status ≥ 200). Returns false when the exchange was abandoned. */
  onUpstreamHeaders(job: Job, target: Target, exchange: UpstreamExchange): boolean {
    const status = exchange.status;
    if (status >= 500 && this.canRetry(job)) {
      this.retry(job, target, `upstream status ${status}`);
      return false;
    }
    if (target.policyRequestId !== null) this.policy.observe?.({ kind: "first-token", requestId: target.policyRequestId, now: Date.now() });
    if (exchange.ok && job.request.keys.length > 0) {
      // Learned as the 2xx headers arrive, but a tick later: engines send headers with the first
      // token, and indexing an 80 KB prompt should not stand between that token and the client.
      const index = target.replica ? this.index : this.peerIndex;
      setImmediate(() => {
        if (!this.closed) index.learn(job.request.keys, target.id, "LOCAL", Date.now());
      });
    }
    return true;
  }

  writeClientHead(job: Job, target: Target, exchange: UpstreamExchange): void {
    const upstream = exchange.headers;
    const out: Record<string, string> = {};
    for (const name of PASSED_RESPONSE_HEADERS) {
      const value = upstream[name];
      if (typeof value === "string") out[name] = value;
    }
    if (target.replica) out["x-meridian-replica"] = target.id;
    out["x-meridian-lb"] = this.config.lbId;
    if (target.peer) out["x-meridian-forwarded-to"] = target.id;
    // A non-stream body is complete by now (sent in one write): its length is known exactly.
    if (!exchange.streaming) out["content-length"] = String(exchange.buffered.reduce((total, chunk) => total + chunk.length, 0));
    job.res.writeHead(exchange.status, out);
  }

  onUpstreamEnd(job: Job, target: Target, exchange: UpstreamExchange): void {
    this.releaseJob(job, target);
    let usage: UsageReport | null;
    let content: string;
    let outputEvents = 0;
    let firstContentAt = exchange.firstContentAt;
    const observer = exchange.observer;
    if (observer) {
      usage = observer.usage;
      content = observer.content;
      outputEvents = observer.contentEvents;
    } else {
      const parsed = exchange.ok ? readCompletionBody(Buffer.concat(exchange.buffered).toString("utf8")) : { content: "", usage: null };
      usage = parsed.usage;
      content = parsed.content;
      if (content.length > 0 && exchange.firstByteAt !== null) firstContentAt = exchange.firstByteAt;
    }
    this.finishJob(job, target, exchange.status, { usage, content, outputEvents, firstContentAt }, exchange.ok ? null : `upstream status ${exchange.status}`);
  }

  canRetry(job: Job): boolean {
    return job.attempts < 2 && !job.res.headersSent && !job.clientGone;
  }

  retry(job: Job, target: Target, reason: string): void {
    this.releaseJob(job, target);
    job.excluded.add(target.id);
    this.metrics.retries.inc({ replica: target.id });
    this.logger.debug({ target: target.id, reason }, "retrying on another target");
    this.placeOrQueue(job);
  }

  onUpstreamFailure(job: Job, target: Target, error: unknown, streamStarted: boolean): void {
    const message = error instanceof Error ? error.message : String(error);
    if (job.clientGone) {
      this.releaseJob(job, target);
      this.finishJob(job, target, 499, null, "client closed the request");
      return;
    }
    if (target.replica && isConnectionFailure(error)) target.replica.markUnreachable(message);
    if (!streamStarted && this.canRetry(job)) {
      this.retry(job, target, message);
      return;
    }
    this.releaseJob(job, target);
    if (job.res.headersSent) {
      // Bytes already went out: the only honest signal left is to cut the stream.
      job.res.destroy();
      this.finishJob(job, target, 502, null, message);
      return;
    }
    this.failJob(job, new HttpError(502, `upstream ${target.kind} ${target.id} failed: ${message}`, "server_error", "upstream_error"), "upstream_error", target);
  }

  private releaseJob(job: Job, target: Target): void {
    if (target.released) return;
    target.released = true;
    if (target.policyRequestId !== null) this.policy.observe?.({ kind: "complete", requestId: target.policyRequestId, now: Date.now() });
    if (target.replica) {
      target.replica.inFlight = Math.max(0, target.replica.inFlight - 1);
      target.replica.queuedTokens = Math.max(0, target.replica.queuedTokens - job.view.inputTokens);
      // A slot freed: the queue head may fit now.
      setImmediate(() => this.queue.drain());
    }
  }

  private failJob(job: Job, error: HttpError, reason: string, target: Target | null = null): void {
    if (job.done) return;
    this.metrics.rejected.inc({ reason });
    if (!job.clientGone) sendError(job.res, error);
    this.finishJob(job, target, error.status, null, error.message);
  }

  // ------------------------------------------------------------------ completion bookkeeping

  private finishJob(
    job: Job,
    target: Target | null,
    status: number,
    outcome: { usage: UsageReport | null; content: string; outputEvents: number; firstContentAt: number | null } | null,
    error: string | null,
  ): void {
    if (job.done) return;
    job.done = true;
    const end = performance.now();
    const e2eMs = end - job.arrival;
    const ttftMs = outcome?.firstContentAt != null ? outcome.firstContentAt - job.arrival : null;
    const usage = outcome?.usage ?? null;
    const replicaLabel = target ? (target.kind === "peer" ? `peer:${target.id}` : target.id) : "none";
    this.totals.requests++;
    if (status >= 400) this.totals.errors++;
    this.metrics.requests.inc({ policy: job.policy, replica: replicaLabel, status: String(status) });
    if (status >= 200 && status < 300) {
      this.metrics.e2e.observe({ replica: replicaLabel }, e2eMs / 1000);
      if (ttftMs !== null) this.metrics.ttft.observe({ replica: replicaLabel }, ttftMs / 1000);
    }
    const replica = target?.replica ?? null;
    if (replica && status >= 200 && status < 300) replica.requests++;
    if (usage?.promptTokens != null) {
      this.estimator.observe(job.request.promptChars, usage.promptTokens);
      if (replica) replica.promptTokensSum += usage.promptTokens;
    }
    const predicted = target?.predictedCachedTokens ?? 0;
    const actual = usage?.cachedTokens ?? null;
    if (replica && actual !== null) {
      this.metrics.observePrediction(predicted, actual);
      replica.predictedCachedSum += predicted;
      replica.actualCachedSum += actual;
      replica.absErrorSum += Math.abs(predicted - actual);
    }
    this.telemetry.append({
      time: job.arrivalWall,
      lbId: this.config.lbId,
      region: this.config.region,
      replicaId: target?.kind === "replica" ? target.id : null,
      configVersion: job.configVersion,
      policy: job.policy,
      weights: job.weights,
      inputTokens: Math.round(job.view.inputTokens),
      predictedCachedTokens: Math.round(predicted),
      actualCachedTokens: actual,
      ttftMs,
      e2eMs,
      outputTokens: usage?.completionTokens ?? outcome?.outputEvents ?? 0,
      status,
      error,
      forwarded: target?.kind === "peer",
      hop: job.hop,
      sessionKey: job.request.sessionKey,
      clientRegion: job.view.clientRegion,
    });
    // Learn the next turn (prompt + reply) off the response path: the engine cached the reply too.
    // Only full blocks are keyed, so when the reply does not complete a new block the next turn's
    // keys are exactly the prompt's, already learned: skip re-hashing the whole prompt.
    if (replica && outcome && outcome.content.length > 0 && status >= 200 && status < 300 && addsFullBlock(job.request, outcome.content)) {
      const content = outcome.content;
      setImmediate(() => {
        if (this.closed) return;
        this.index.learn(nextTurnKeys(job.request, content), replica.id, "LOCAL", Date.now());
      });
    }
  }

  // ------------------------------------------------------------------ state

  state(): LbState {
    const now = Date.now();
    const totalRequests = [...this.replicas.values()].reduce((sum, r) => sum + r.requests, 0);
    const stats = this.index.stats();
    return {
      schema: LB_STATE_SCHEMA,
      lbId: this.config.lbId,
      region: this.config.region,
      configVersion: this.config.version,
      policy: this.config.policy,
      weights: this.config.weights,
      crossRegion: this.config.crossRegion,
      startedAt: this.startedAt,
      replicas: [...this.replicas.values()].map((r) => {
        const load = r.scrape.load;
        const checked = Math.max(r.predictedCachedSum, r.actualCachedSum);
        return {
          id: r.id,
          url: r.config.url,
          region: r.config.region,
          model: r.config.model,
          state: r.config.state,
          healthy: r.healthy,
          rttMs: r.rttMs,
          inFlight: r.inFlight,
          queuedTokens: r.queuedTokens,
          peerQueuedTokens: r.peerQueuedTokens,
          full: this.isFull(r, now),
          share: totalRequests === 0 ? 0 : r.requests / totalRequests,
          requests: r.requests,
          cacheHitRate: r.promptTokensSum > 0 ? Math.min(1, r.actualCachedSum / r.promptTokensSum) : null,
          predictionAccuracy: checked > 0 ? Math.max(0, 1 - r.absErrorSum / checked) : null,
          scrape: {
            ok: r.scrape.ok && r.freshLoad(now) !== null,
            ageMs: r.scrapeAgeMs(now),
            error: r.scrape.error ?? (r.scrape.at !== null && r.freshLoad(now) === null ? "stale" : null),
            running: load?.running ?? 0,
            waiting: load?.waiting ?? 0,
            usedTokens: load?.usedTokens ?? 0,
          },
        };
      }),
      queue: { length: this.queue.length, maxLength: this.config.limits.queueMaxLength, oldestWaitMs: this.queue.oldestWaitMs(now) },
      index: { routes: stats.routes, blocks: stats.blocks, evictions: stats.evictions, hits: stats.hits, lookups: stats.lookups },
      totals: { ...this.totals, queued: this.queue.totalQueued },
      telemetry: { lastSeq: this.telemetry.latestSeq, bufferSize: this.telemetry.capacity },
      peers: [...this.peers.values()].map((p) => {
        const report = p.freshReport(now);
        return {
          id: p.id,
          region: p.config.region,
          healthy: report !== null,
          queueLength: report?.queueLength ?? 0,
          availableReplicas: report?.availableReplicas ?? 0,
        };
      }),
    };
  }

  /** Models served, for GET /v1/models. */
  models(): { id: string; replicas: number; healthy: number }[] {
    const byModel = new Map<string, { id: string; replicas: number; healthy: number }>();
    for (const r of this.replicas.values()) {
      const entry = byModel.get(r.config.model) ?? { id: r.config.model, replicas: 0, healthy: 0 };
      entry.replicas++;
      if (this.isRoutable(r)) entry.healthy++;
      byModel.set(r.config.model, entry);
    }
    return [...byModel.values()];
  }

  flushIndex(): void {
    this.index.clear();
    this.peerIndex.clear();
  }
}

const ASSISTANT_ROLE = "assistant";

/** Whether prompt + reply (as the next turn presents it) has more full blocks than the prompt. */
function addsFullBlock(request: ParsedInference, reply: string): boolean {
  // Chat serialisation adds `role ␟ content ␞` per message (chatSerialisedLength's +2).
  const added = request.messages !== null ? ASSISTANT_ROLE.length + 2 + reply.length : reply.length;
  return Math.floor((request.promptChars + added) / DEFAULT_BLOCK_CHARS) > request.keys.length;
}

/** Keys of prompt + assistant reply. From the prompt's keyer state only the reply is hashed (an 80 KB
 * prompt is not re-keyed to learn a few hundred characters of reply); the keys are the same as
 * re-keying the whole conversation (keys.test.ts checks that equivalence). */
function nextTurnKeys(request: ParsedInference, content: string): BlockKey[] {
  const state = request.keyerState;
  if (state !== undefined) {
    const added = request.messages !== null ? continueChatBlockKeys(state, [{ role: ASSISTANT_ROLE, content }]).keys : continuePromptBlockKeys(state, content).keys;
    return added.length === 0 ? request.keys : request.keys.concat(added);
  }
  return request.messages !== null
    ? chatBlockKeys([...request.messages, { role: ASSISTANT_ROLE, content }])
    : promptBlockKeys((request.prompt ?? "") + content);
}

function isConnectionFailure(error: unknown): boolean {
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

async function waitAtMost(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  if (timer) clearTimeout(timer);
}

/** One request/response with one upstream (replica or peer LB), as an undici dispatch handler. */
class UpstreamExchange implements Dispatcher.DispatchHandler {
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
    private readonly balancer: Balancer,
    private readonly job: Job,
    private readonly target: Target,
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
      controller.abort(new Error("client closed the request"));
      this.balancer.onUpstreamFailure(this.job, this.target, new Error("client closed the request"), false);
      return;
    }
    if (!this.balancer.onUpstreamHeaders(this.job, this.target, this)) {
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
    // Headers go to the client with the first body bytes, not before: until then a failure can
    // still be retried on another replica without the client noticing.
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
    this.balancer.onUpstreamEnd(this.job, this.target, this);
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.abandoned) return;
    this.abandoned = true;
    if (!this.headWritten && this.balancer.canRetry(this.job)) {
      if (this.target.replica && isConnectionFailure(error)) this.target.replica.markUnreachable(error.message);
      this.balancer.retry(this.job, this.target, error.message);
      return;
    }
    this.balancer.onUpstreamFailure(this.job, this.target, error, this.headWritten);
  }

  private writeHead(): void {
    if (this.headWritten) return;
    this.headWritten = true;
    this.balancer.writeClientHead(this.job, this.target, this);
  }
}
