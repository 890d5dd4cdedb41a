// LbCore: one load balancer's decisions and bookkeeping, with no I/O. The proxy drives it on the wall
// clock from HTTP events; the simulator drives it on its virtual clock from simulated events. Both
// feed it the same inputs (probe, scrape and peer-poll results, arrivals, response headers,
// completions, time passing) and act on what it returns (dispatch to a replica, forward to a peer,
// answer a refusal, learn), so every mode behaves the same in both. docs/ARCHITECTURE.md describes
// the API and the order in which drivers call it.
import {
  CacheTruth,
  createPolicy,
  createRng,
  DEFAULT_BLOCK_CHARS,
  PrefixIndex,
  TokenEstimator,
  type CandidateView,
  type EngineCacheScrape,
  type Policy,
  type PrefixMatcher,
  type Rng,
  type ScrapedLoad,
} from "@meridian/routing";
import type { LbConfig } from "@meridian/protocol";
import { bookedEndpointDown, onCurrentEndpoint } from "./booking";
import { completeTicket, headersLearning, isSuccess, withValidUsage, type Completion, type LearnInstruction, type Outcome } from "./completion";
import { type DecodeSample, type FirstBytePlan, ticketFirstBytePlan } from "./deadline";
import { ForwardLedger } from "./forward-ledger";
import { HoldQueue } from "./hold-queue";
import { holdClass, knownModel, placementLogEntry, planPlacement, type Placement, type PlacementContext } from "./placement";
import { hasAlternative, isRetryableStatus, type RedispatchCause } from "./redispatch";
import { forgetRemovedReplicas } from "./replica-removal";
import { buildLbState, buildPeerReport, modelCounts, refreshPeerQueuedTokens, type LbStateBody, type ReportSources, type StateExtras } from "./reports";
import { type PeerRecord, PredictionSums, type ReplicaRecord, syncTargets, type HealthChange, type PeerReportBody, type TargetChanges } from "./targets";
import { admittedTicket, failures, peerTarget, replicaTarget, type AdmitInput, type Failure, type Ticket } from "./ticket";
import type { CacheModel, LbCoreOptions, Settled } from "./lb-core-options";

export type { CacheModel, LbCoreOptions, Settled } from "./lb-core-options";

/** A request is tried on at most this many targets (the first and one retry). */
export const MAX_ATTEMPTS = 2;
/** Block keys sent to peers in a prefix snapshot by default (most recently used first). */
export const DEFAULT_PEER_SNAPSHOT_KEYS = 4_096;

export class LbCore<J> {
  config: LbConfig;
  readonly replicas = new Map<string, ReplicaRecord>();
  readonly peers = new Map<string, PeerRecord>();
  index: PrefixIndex;
  /** What the LB knows of each replica's real cache, and the rules that keep the index close to it. */
  readonly truth: CacheTruth;
  /** SkyLB snapshot index: which peer LB is believed to hold which blocks. */
  peerIndex: PrefixIndex;
  readonly estimator = new TokenEstimator();
  readonly queue = new HoldQueue<Ticket<J>>();
  readonly totals = { requests: 0, errors: 0, forwarded: 0 };
  /** LB-wide predicted vs reported cached tokens. */
  readonly prediction = new PredictionSums();
  readonly peerPollIntervalMs: number;
  private policy: Policy;
  /** Dispatches told to policies that observe them: each one's id (a retry is a new dispatch). */
  private observedDispatches = 0;
  private readonly rng: Rng;
  private readonly onPlacement: LbCoreOptions["onPlacement"];
  private readonly placementContext: PlacementContext;
  private readonly cacheModel: CacheModel;
  private readonly matcher: PrefixMatcher | null;
  /** Tokens one block key stands for in the requests this LB admits (a trace's block size, or a chat
   * block's characters at the estimator's characters per token); null before the first request. */
  private keyTokens: number | null = null;
  /** Until when the replicas' peer load (refreshPeerQueuedTokens) holds without summing it again. */
  private peerLoadValidUntil = Number.NEGATIVE_INFINITY;
  /** Forwards no peer report shows yet, by the peer's URL (forward-ledger.ts). */
  private readonly forwards = new ForwardLedger();

  constructor(options: LbCoreOptions) {
    this.config = options.config;
    this.peerPollIntervalMs = options.peerPollIntervalMs;
    this.rng = createRng(options.seed);
    this.onPlacement = options.onPlacement;
    this.policy = createPolicy(this.config.policy);
    this.cacheModel = options.cacheModel ?? "learned";
    this.matcher = options.matcher ?? null;
    this.index = this.newIndex(this.config);
    this.truth = new CacheTruth(this.index);
    this.peerIndex = this.newIndex(this.config);
    syncTargets(this.config, this.replicas, this.peers, this.index, this.peerIndex, this.forwards);
    this.applyCapacityOverrides();
    this.placementContext = {
      config: this.config,
      replicas: this.replicas,
      replicaList: [...this.replicas.values()],
      peers: this.peers,
      peerPollIntervalMs: this.peerPollIntervalMs,
      policy: this.policy,
      index: this.matcher ?? this.index,
      peerIndex: this.peerIndex,
      rng: this.rng,
      scratchLocal: [],
      scratchPeers: [],
    };
  }

  // ---------------------------------------------------------------- config and targets

  /** Applies a validated config: policy and weights take effect for requests admitted from now on.
   * Call drain() afterwards: new replicas or bounds may let held requests go. A config the core
   * cannot run throws before anything changes: the core keeps the config it had. */
  applyConfig(next: LbConfig): TargetChanges {
    const previous = this.config;
    // Everything that checks the config is built first; only then does state change.
    const policy = next.policy !== previous.policy ? createPolicy(next.policy) : this.policy;
    const rebuilt =
      next.index.capacityBlocks !== previous.index.capacityBlocks || next.index.ttlMs !== previous.index.ttlMs
        ? { index: this.newIndex(next), peerIndex: this.newIndex(next) }
        : null;
    this.config = next;
    this.policy = policy;
    if (rebuilt) {
      this.index = rebuilt.index;
      this.truth.rebind(rebuilt.index, this.blockTokens());
      this.peerIndex = rebuilt.peerIndex;
    }
    const changes = syncTargets(next, this.replicas, this.peers, this.index, this.peerIndex, this.forwards);
    // Peers or replicas may have come or gone: the peers' load is summed again at the next placement.
    this.peerLoadValidUntil = Number.NEGATIVE_INFINITY;
    forgetRemovedReplicas(changes.removedReplicas, this.truth, this.policy);
    this.applyCapacityOverrides();
    this.placementContext.replicaList = [...this.replicas.values()];
    return changes;
  }

  private newIndex(config: LbConfig): PrefixIndex {
    return new PrefixIndex({ capacityBlocks: config.index.capacityBlocks, ttlMs: config.index.ttlMs });
  }

  /** Tokens one block key stands for: what the budget divides a KV capacity by. */
  private blockTokens(): number {
    return this.keyTokens ?? DEFAULT_BLOCK_CHARS / this.estimator.charsPerToken;
  }

  /** The operator's cacheCapacityTokens per replica (LbConfig) sizes its part of the index. */
  private applyCapacityOverrides(): void {
    if (this.cacheModel !== "learned") return;
    for (const r of this.replicas.values()) this.truth.setCapacityOverride(r.id, r.config.cacheCapacityTokens ?? null, this.blockTokens());
  }

  // ---------------------------------------------------------------- what probes, scrapes and polls report

  probeSucceeded(replicaId: string, sampleMs: number): HealthChange {
    return this.replicas.get(replicaId)?.probeSucceeded(sampleMs) ?? null;
  }

  probeFailed(replicaId: string): HealthChange {
    return this.replicas.get(replicaId)?.probeFailed(this.config.probes) ?? null;
  }
  /** A refused or reset connection on a request: excluded until its probe recovers. */
  markUnreachable(replicaId: string): boolean {
    return this.replicas.get(replicaId)?.markUnreachable(this.config.probes) ?? false;
  }

  /** False when the ticket's replica or peer was re-pointed to a new URL (or removed) since it was booked (booking.ts). */
  onCurrentTarget(ticket: Ticket<J>): boolean {
    return onCurrentEndpoint(ticket.target, this);
  }

  /** Whether the endpoint the ticket waits on is down (booking.ts). */
  bookedTargetDown(ticket: Ticket<J>, now: number): boolean {
    return bookedEndpointDown(ticket.target, this, now, this.peerPollIntervalMs);
  }

  /** A scrape of the replica's metrics: its load, and what the cache model reads (KV capacity, the
   * process's identity). True when the engine restarted and its part of the index was cleared. A
   * load with a non-finite or negative gauge is recorded as a failed scrape (targets.ts, invalidGauge). */
  scrapeSucceeded(replicaId: string, load: ScrapedLoad, now: number, cache: EngineCacheScrape | null = null): boolean {
    const replica = this.replicas.get(replicaId);
    if (!replica?.scrapeSucceeded(load, now) || cache === null) return false;
    // The KV capacity the policies see (kvCapacityTokens; the config's cacheCapacityTokens overrides it).
    replica.engineCapacityTokens = cache.capacityTokens;
    if (this.cacheModel !== "learned") return false;
    return this.truth.engineMetrics(replicaId, cache, this.blockTokens(), now).restarted;
  }

  scrapeFailed(replicaId: string, error: string): void {
    this.replicas.get(replicaId)?.scrapeFailed(error);
  }

  /** A peer's report arrived after a poll that took `rttSampleMs`: its load, availability and snapshot. */
  peerReported(peerId: string, report: PeerReportBody, rttSampleMs: number, now: number): void {
    const peer = this.peers.get(peerId);
    if (!peer) return;
    peer.reported(report, rttSampleMs, now);
    // Each snapshot is the peer's current belief: a complete one replaces what it said before.
    if (report.snapshot) this.peerIndex.learnSnapshot(peerId, report.snapshot.keys, now, report.snapshot.truncated);
    this.peerLoadValidUntil = refreshPeerQueuedTokens(this, now);
  }

  /** A poll failed. True the first time after a success (the shell logs transitions only). */
  peerPollFailed(peerId: string, error: string): boolean {
    const peer = this.peers.get(peerId);
    if (!peer) return false;
    const first = peer.lastError === null;
    peer.lastError = error;
    return first;
  }

  /** Block keys to ask each peer for in its report: the peer index only steers `via-peer`
   * forwarding, so a `direct` LB asks for none. */
  snapshotKeysWanted(max: number): number {
    return this.config.crossRegion === "via-peer" ? max : 0;
  }

  // ---------------------------------------------------------------- the request path

  /** A 404 for a model no configured replica serves, else null (checked before admission). */
  checkModel(model: string | null): Failure | null {
    return knownModel(this.replicas, model) ? null : failures.modelNotFound(model ?? "");
  }

  /** A 400 for a prompt above limits.maxPromptTokens (its tokens, or estimated from its characters),
   * else null. route() applies the same rule; a driver that knows the prompt's size early asks here first. */
  checkPromptTokens(prompt: Pick<AdmitInput, "promptChars" | "inputTokens">): Failure | null {
    return this.promptTokensFailure(this.promptTokens(prompt));
  }

  private promptTokens(prompt: Pick<AdmitInput, "promptChars" | "inputTokens">): number {
    return prompt.inputTokens ?? this.estimator.estimate(prompt.promptChars ?? 0);
  }

  private promptTokensFailure(tokens: number): Failure | null {
    const limit = this.config.limits.maxPromptTokens;
    return tokens > limit ? failures.promptTooLong(tokens, limit) : null;
  }

  admit(owner: J, input: AdmitInput, now: number): Ticket<J> {
    const tokensPerBlock = input.tokensPerBlock ?? DEFAULT_BLOCK_CHARS / this.estimator.charsPerToken;
    // Chat keys size the index's budgets; token-exact keys only until one comes (an LB's token-id
    // prompts must not swing every budget between 16 and 64/ratio tokens a block).
    if (input.tokensPerBlock === undefined || this.keyTokens === null) this.keyTokens = tokensPerBlock;
    return admittedTicket(owner, input, this.promptTokens(input), tokensPerBlock, this.config, now);
  }

  /** Places a new (or retried) request now, or holds it. A hold that finds the queue full is a
   * refusal. After "replica" or "peer" the driver sends it; after "fail" it answers the failure.
   * `freeNow`: peers count only the free replicas that this LB's forwards their reports cannot show
   * have not taken (a request moving past its first-byte deadline or at the cap; redispatch.ts). */
  route(ticket: Ticket<J>, now: number, freeNow = false): Placement {
    // At admission only: a retry is not refused for a limit lowered since (an upstream failure would read as "prompt too long").
    const tooLong = ticket.attempts === 0 ? this.promptTokensFailure(ticket.view.inputTokens) : null;
    if (tooLong) return this.commit(ticket, { kind: "fail", failure: tooLong }, now);
    const placement = this.plan(ticket, now, freeNow);
    if (placement.kind !== "hold") return this.commit(ticket, placement, now);
    if (!this.queue.push(ticket, now, this.config.limits.queueMaxLength)) {
      return this.commit(ticket, { kind: "fail", failure: failures.queueFull(this.config.limits.queueMaxLength) }, now);
    }
    ticket.held = true;
    this.log(ticket, placement, []);
    return placement;
  }

  /** Refuses held requests that waited past the bound, then places every held request that can go,
   * oldest first within its hold class (hold-queue.ts, placeReady). Call it after anything that may
   * free capacity (a completion, a scrape, a probe, a peer report, a config) and when nextExpiryAt()
   * passes. */
  drain(now: number): Settled<J>[] {
    const settled: Settled<J>[] = [];
    const settle = (ticket: Ticket<J>, placement: Placement) => {
      ticket.held = false;
      settled.push({ ticket, placement: this.commit(ticket, placement, now) as Settled<J>["placement"] });
    };
    const { queueMaxWaitMs } = this.config.limits;
    for (const ticket of this.queue.expire(now, queueMaxWaitMs)) settle(ticket, { kind: "fail", failure: failures.queueTimeout(queueMaxWaitMs) });
    this.queue.placeReady(holdClass, (ticket) => {
      const placement = this.plan(ticket, now);
      if (placement.kind === "hold") return false;
      settle(ticket, placement);
      return true;
    });
    return settled;
  }

  /** When the oldest held request will have waited the bound (null when none waits). */
  nextExpiryAt(): number | null {
    return this.queue.nextExpiryAt(this.config.limits.queueMaxWaitMs);
  }

  /** The client went away while its request was held. */
  cancel(ticket: Ticket<J>): boolean {
    if (!ticket.held) return false;
    ticket.held = false;
    return this.queue.remove(ticket);
  }

  /** Every held request, refused (shutdown). */
  shutdown(now: number): Settled<J>[] {
    return this.queue.clear().map((ticket) => {
      ticket.held = false;
      return { ticket, placement: this.commit(ticket, { kind: "fail", failure: failures.shuttingDown() }, now) as Settled<J>["placement"] };
    });
  }

  /** Whether another target may still be tried (transport conditions are the shell's to add). */
  mayRetry(ticket: Ticket<J>): boolean {
    return ticket.attempts < MAX_ATTEMPTS && !ticket.done;
  }

  /** Whether an upstream answer with `status` (before any byte reached the client) sends the request
   * to another target: 502/503/504 do; a 500 is the engine's answer to this body (redispatch.ts). */
  mayRetryAfterStatus(ticket: Ticket<J>, status: number): boolean {
    return isRetryableStatus(status) && this.mayRetry(ticket);
  }

  /** Whether a request stuck on its target (its first-byte deadline or the header timeout passed, or its
   * replica turned unhealthy) should move now: it may be retried, and another target takes it (redispatch.ts). */
  canRedispatch(ticket: Ticket<J>, now: number, cause: RedispatchCause): boolean {
    if (!this.mayRetry(ticket)) return false;
    const queueHasRoom = this.queue.length < this.config.limits.queueMaxLength;
    return hasAlternative(ticket, this.config, this.placementContext.replicaList, this.peers, this.peerPollIntervalMs, now, cause, queueHasRoom);
  }

  /** A forward's request left for its peer (it may have waited for a connection): the peer's next
   * report may show it (forward-ledger.ts). */
  forwardLeft(ticket: Ticket<J>, now: number): void {
    if (ticket.target?.kind === "peer" && !ticket.target.released) this.forwards.left(ticket, now);
  }

  /** The first-byte deadline of a ticket just placed on a replica or forwarded to a peer (deadline.ts). */
  firstByteDeadline(ticket: Ticket<J>, response: { stream: boolean; maxOutputTokens: number | null }): FirstBytePlan {
    return ticketFirstBytePlan(ticket.target, this.bookedOn(ticket), ticket.view.inputTokens, this.config.limits, response);
  }

  /** The first response byte arrived `elapsedMs` after dispatch: the replica's history learns it (a
   * peer's, once the forward's answer says what the peer held of its prompt: completion.ts). */
  firstByteObserved(ticket: Ticket<J>, plan: FirstBytePlan, elapsedMs: number): void {
    const target = ticket.target;
    if (target?.kind === "peer") target.firstByteMs = elapsedMs;
    else target?.record?.firstByte.observeFirstByte(plan.tokensAhead, elapsedMs, target.record.rtt.ms ?? 0);
  }

  /** A stream's output (summed over its sequences: DecodeSample) took `decodeMs` from its first byte to its last. */
  decodeObserved(ticket: Ticket<J>, sample: DecodeSample, decodeMs: number): void {
    this.bookedOn(ticket)?.firstByte.observeDecode(sample, decodeMs);
  }

  /** The record the ticket's dispatch was booked on: its counters and its history are that record's. */
  private bookedOn(ticket: Ticket<J>): ReplicaRecord | PeerRecord | undefined {
    return ticket.target?.record ?? ticket.target?.peer ?? undefined;
  }

  /** The current target failed before any byte reached the client: release it, exclude it, place
   * again. `cause`: why a request that had no answer left its target (canRedispatch's); past its
   * deadline or at the cap it is placed as canRedispatch counted, on a target that can take it now. */
  retry(ticket: Ticket<J>, now: number, cause?: RedispatchCause): Placement {
    const target = ticket.target;
    const current = this.onCurrentTarget(ticket);
    this.release(ticket, now);
    if (target && current) (ticket.excluded ??= new Set()).add(target.id);
    ticket.target = null;
    return this.route(ticket, now, cause === "deadline" || cause === "timeout");
  }

  /** The request no longer occupies its replica (response ended, failed, or retried elsewhere): its
   * counters are released and its policy is told, once per dispatch. */
  private release(ticket: Ticket<J>, now: number): void {
    const target = ticket.target;
    if (!target || target.released) return;
    target.released = true;
    if (target.kind === "peer") this.forwards.ended(ticket);
    if (target.kind !== "replica") return;
    target.record?.unbook(ticket.view.inputTokens, target.pendingPrefillTokens);
    target.pendingPrefillTokens = 0;
    if (target.observedId !== null) target.observer?.observe?.({ kind: "complete", requestId: target.observedId, now });
  }

  /** The target's response started (a stream's first byte; a reply's headers): its prefill is over, so its
   * uncached tokens leave the replica's pending prefill, and on a 2xx the policy hears of its first
   * token. Returns what to learn (the prompt, on 2xx). */
  headersReceived(ticket: Ticket<J>, status: number, now: number): LearnInstruction | null {
    const target = ticket.target;
    if (target !== null && !target.released && !target.responded) {
      target.responded = true;
      const replica = target.record;
      if (replica) replica.pendingPrefillTokens = Math.max(0, replica.pendingPrefillTokens - target.pendingPrefillTokens);
      target.pendingPrefillTokens = 0;
      if (target.observedId !== null && isSuccess(status)) target.observer?.observe?.({ kind: "first-token", requestId: target.observedId, now });
    }
    return headersLearning(ticket, status, this.replicas, this.peers);
  }

  /** The request ended (served, failed or refused): releases it, calibrates the token estimate,
   * applies the cached-token feedback, records accuracy and totals, and returns the completion
   * (telemetry event, next-turn learning). */
  complete(ticket: Ticket<J>, reported: Outcome, now: number): Completion {
    const outcome = withValidUsage(reported);
    this.release(ticket, now);
    ticket.done = true;
    this.totals.requests++;
    if (outcome.status >= 400) this.totals.errors++;
    const promptTokens = outcome.usage?.promptTokens;
    if (promptTokens != null && ticket.calibrationChars !== null) this.estimator.observe(ticket.calibrationChars, promptTokens);
    // Accuracy, cache feedback and learning are about the replica the LB routes to now: a record that
    // a URL change replaced says nothing about the new one (completion.ts, configuredReplica).
    return completeTicket(
      { lbId: this.config.lbId, region: this.config.region, replicas: this.replicas, peers: this.peers, lbPrediction: this.prediction, truth: this.truth, now },
      ticket,
      outcome,
    );
  }

  learn(instruction: LearnInstruction, now: number): void {
    const index = instruction.index === "local" ? this.index : this.peerIndex;
    index.learn(instruction.keys, instruction.targetId, "LOCAL", now);
  }

  // ---------------------------------------------------------------- snapshots

  peerReport(now: number, snapshotKeys: number): PeerReportBody {
    return buildPeerReport(this.sources(), now, snapshotKeys);
  }

  state(now: number, extras: Omit<StateExtras, "totals">): LbStateBody {
    this.refreshPeerLoad(now);
    return buildLbState(this.sources(), now, { ...extras, totals: { ...this.totals } });
  }

  /** Models served (GET /v1/models): per model its replicas, those passing probes, those taking requests (healthy, enabled). */
  models(): ReturnType<typeof modelCounts> {
    return modelCounts(this.replicas.values());
  }

  /** The operator emptied the prefix indexes (POST /admin/flush): every replica's part, and its
   * learned horizon, starts over, and the replicas' state says so. */
  flushIndex(now: number): void {
    for (const id of this.replicas.keys()) this.truth.clear(id, now, "operator");
    this.index.clear();
    this.peerIndex.clear();
  }

  // ---------------------------------------------------------------- internals

  /** Sums the peers' load on each replica again once a report it counted has gone stale. */
  private refreshPeerLoad(now: number): void {
    if (now > this.peerLoadValidUntil) this.peerLoadValidUntil = refreshPeerQueuedTokens(this, now);
  }

  private sources(): ReportSources {
    const { config, replicas, peers, peerPollIntervalMs, index, truth, queue } = this;
    return { config, replicas, peers, peerPollIntervalMs, index, truth, queue };
  }

  private plan(ticket: Ticket<J>, now: number, freeNow = false): Placement {
    this.refreshPeerLoad(now);
    // Refreshed in place rather than rebuilt: plan() runs once per request and per queue retry.
    const ctx = this.placementContext;
    ctx.config = this.config;
    ctx.policy = this.policy;
    ctx.index = this.matcher ?? this.index;
    ctx.peerIndex = this.peerIndex;
    try {
      return planPlacement(ctx, ticket, now, freeNow);
    } catch (error) {
      // A routing bug must fail one request, not the LB.
      return { kind: "fail", failure: failures.routingError(error) };
    }
  }

  /** Records a placement's effect on this LB's counters, tells an observing policy of a dispatch,
   * and logs it. */
  private commit(ticket: Ticket<J>, placement: Placement, now: number): Placement {
    if (placement.kind === "replica" || placement.kind === "peer") ticket.policy = this.config.policy;
    if (placement.kind === "replica") {
      const { decision, replicaId } = placement;
      const replica = this.replicas.get(replicaId);
      const inputTokens = ticket.view.inputTokens;
      // The prefill still to do: what the decision did not predict cached (Dynamo's "active prefill").
      const pendingPrefillTokens = replica ? Math.max(0, inputTokens - decision.predictedCachedTokens) : 0;
      replica?.book(inputTokens, pendingPrefillTokens);
      ticket.attempts++;
      const observer = this.policy.observe ? this.policy : null;
      const observedId = observer ? String(++this.observedDispatches) : null;
      const snapshot = this.cacheModel === "learned" ? this.truth.dispatch(ticket, decision, now) : null;
      ticket.target = replicaTarget(replica ?? null, replicaId, decision, pendingPrefillTokens, observer, observedId, snapshot);
      if (observedId !== null) observer?.observe?.({ kind: "dispatch", requestId: observedId, replicaId, request: ticket.view, decision, now });
    } else if (placement.kind === "peer") {
      this.totals.forwarded++;
      ticket.attempts++;
      const peer = this.peers.get(placement.peerId) ?? null;
      if (peer) this.forwards.placed(ticket, peer.config.url, ticket.model);
      ticket.target = peerTarget(peer, placement.peerId, placement.reason);
    }
    this.log(ticket, placement, placement.kind === "replica" ? placement.candidates : []);
    return placement;
  }

  private log(ticket: Ticket<J>, placement: Placement, candidates: readonly CandidateView[]): void {
    this.onPlacement?.(placementLogEntry(this.config.lbId, ticket, placement), candidates, ticket);
  }
}
