// LbCore: one load balancer's decisions and bookkeeping, with no I/O. The proxy drives it on the wall
// clock from HTTP events; the simulator drives it on its virtual clock from simulated events. Both
// feed it the same inputs (probe, scrape and peer-poll results, arrivals, response headers,
// completions, time passing) and act on what it returns (dispatch to a replica, forward to a peer,
// answer a refusal, learn), so every mode behaves the same in both. docs/ARCHITECTURE.md describes
// the API and the order in which drivers call it.
import {
  createPolicy,
  createRng,
  DEFAULT_BLOCK_CHARS,
  PrefixIndex,
  TokenEstimator,
  type CandidateView,
  type Policy,
  type Rng,
  type ScrapedLoad,
} from "@meridian/routing";
import type { LbConfig } from "@meridian/protocol";
import { completeTicket, headersLearning, type Completion, type LearnInstruction, type Outcome } from "./completion";
import { HoldQueue } from "./hold-queue";
import { knownModel, placementLogEntry, planPlacement, type Placement, type PlacementContext, type PlacementLogEntry } from "./placement";
import { buildLbState, buildPeerReport, refreshPeerQueuedTokens, type LbStateBody, type ReportSources, type StateExtras } from "./reports";
import { type PeerRecord, PredictionSums, type ReplicaRecord, syncTargets, type HealthChange, type PeerReportBody, type TargetChanges } from "./targets";
import { failures, Ticket, type AdmitInput, type Failure } from "./ticket";
import { admitToTrial } from "./trial";

/** A request is tried on at most this many targets (the first and one retry). */
export const MAX_ATTEMPTS = 2;
/** Block keys sent to peers in a prefix snapshot by default (most recently used first). */
export const DEFAULT_PEER_SNAPSHOT_KEYS = 4_096;

/** A queued request the core has now placed, forwarded or refused. */
export interface Settled<J> {
  ticket: Ticket<J>;
  placement: Exclude<Placement, { kind: "hold" }>;
}

export interface LbCoreOptions {
  config: LbConfig;
  /** Seeds policy tie-breaks and random policies. */
  seed: number;
  /** How often peers are polled: their reports go stale after 3 intervals. */
  peerPollIntervalMs: number;
  /** Observes every placement decision, with the candidate views the policy saw (tests, tracing). */
  onPlacement?: (entry: PlacementLogEntry, candidates: readonly CandidateView[], ticket: Ticket<unknown>) => void;
}

export class LbCore<J> {
  config: LbConfig;
  readonly replicas = new Map<string, ReplicaRecord>();
  readonly peers = new Map<string, PeerRecord>();
  index: PrefixIndex;
  /** SkyLB snapshot index: which peer LB is believed to hold which blocks. */
  peerIndex: PrefixIndex;
  readonly estimator = new TokenEstimator();
  readonly queue = new HoldQueue<Ticket<J>>();
  readonly totals = { requests: 0, errors: 0, forwarded: 0 };
  /** LB-wide predicted vs reported cached tokens. */
  readonly prediction = new PredictionSums();
  readonly peerPollIntervalMs: number;
  private policy: Policy;
  private readonly rng: Rng;
  private readonly onPlacement: LbCoreOptions["onPlacement"];
  private readonly placementContext: PlacementContext;

  constructor(options: LbCoreOptions) {
    this.config = options.config;
    this.peerPollIntervalMs = options.peerPollIntervalMs;
    this.rng = createRng(options.seed);
    this.onPlacement = options.onPlacement;
    this.policy = createPolicy(this.config.policy);
    this.index = this.newIndex(this.config);
    this.peerIndex = this.newIndex(this.config);
    syncTargets(this.config, this.replicas, this.peers, this.index, this.peerIndex);
    this.placementContext = {
      config: this.config,
      replicas: this.replicas,
      replicaList: [...this.replicas.values()],
      peers: this.peers,
      peerPollIntervalMs: this.peerPollIntervalMs,
      policy: this.policy,
      index: this.index,
      peerIndex: this.peerIndex,
      rng: this.rng,
      scratchLocal: [],
      scratchPeers: [],
    };
  }

  // ---------------------------------------------------------------- config and targets

  /** Applies a validated config: policy and weights take effect for requests admitted from now on.
   * Call drain() afterwards: new replicas or bounds may let held requests go. */
  applyConfig(next: LbConfig): TargetChanges {
    const previous = this.config;
    this.config = next;
    if (next.policy !== previous.policy) this.policy = createPolicy(next.policy);
    if (next.index.capacityBlocks !== previous.index.capacityBlocks || next.index.ttlMs !== previous.index.ttlMs) {
      this.index = this.newIndex(next);
      this.peerIndex = this.newIndex(next);
    }
    const changes = syncTargets(next, this.replicas, this.peers, this.index, this.peerIndex);
    this.placementContext.replicaList = [...this.replicas.values()];
    return changes;
  }

  private newIndex(config: LbConfig): PrefixIndex {
    return new PrefixIndex({ capacityBlocks: config.index.capacityBlocks, ttlMs: config.index.ttlMs });
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

  scrapeSucceeded(replicaId: string, load: ScrapedLoad, now: number): void {
    this.replicas.get(replicaId)?.scrapeSucceeded(load, now);
  }

  scrapeFailed(replicaId: string, error: string): void {
    this.replicas.get(replicaId)?.scrapeFailed(error);
  }

  /** A peer's report arrived after a poll that took `rttSampleMs`: its load, availability and snapshot. */
  peerReported(peerId: string, report: PeerReportBody, rttSampleMs: number, now: number): void {
    const peer = this.peers.get(peerId);
    if (!peer) return;
    peer.reported(report, rttSampleMs, now);
    if (report.snapshot && report.snapshot.keys.length > 0) this.peerIndex.learnSnapshot(peerId, report.snapshot.keys, now);
    refreshPeerQueuedTokens(this.sources(), now);
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

  admit(owner: J, input: AdmitInput, now: number): Ticket<J> {
    const inputTokens = input.inputTokens ?? this.estimator.estimate(input.promptChars ?? 0);
    const tokensPerBlock = input.tokensPerBlock ?? DEFAULT_BLOCK_CHARS / this.estimator.charsPerToken;
    const { config } = this;
    const { weights, trial } = admitToTrial(config, input.sessionKey);
    return new Ticket(
      owner,
      input.keys,
      inputTokens,
      tokensPerBlock,
      input.sessionKey,
      input.clientRegion ?? config.region,
      input.model,
      input.hop,
      input.promptChars ?? null,
      input.nextTurnKeys ?? null,
      now,
      config.version,
      config.policy,
      weights,
      trial,
    );
  }

  /** Places a new (or retried) request now, or holds it. A hold that finds the queue full is a
   * refusal. After "replica" or "peer" the driver sends it; after "fail" it answers the failure. */
  route(ticket: Ticket<J>, now: number): Placement {
    const placement = this.plan(ticket, now);
    if (placement.kind !== "hold") return this.commit(ticket, placement);
    if (!this.queue.push(ticket, now, this.config.limits.queueMaxLength)) {
      return this.commit(ticket, { kind: "fail", failure: failures.queueFull(this.config.limits.queueMaxLength) });
    }
    ticket.held = true;
    this.log(ticket, placement, []);
    return placement;
  }

  /** Refuses held requests that waited past the bound, then places from the head while the head
   * can go. Call it after anything that may free capacity (a completion, a scrape, a probe, a peer
   * report, a config) and when nextExpiryAt() passes. */
  drain(now: number): Settled<J>[] {
    const settled: Settled<J>[] = [];
    for (const ticket of this.queue.expire(now, this.config.limits.queueMaxWaitMs)) {
      ticket.held = false;
      const failure = failures.queueTimeout(this.config.limits.queueMaxWaitMs);
      settled.push({ ticket, placement: this.commit(ticket, { kind: "fail", failure }) as Settled<J>["placement"] });
    }
    for (let head = this.queue.peek(); head !== undefined; head = this.queue.peek()) {
      const placement = this.plan(head, now);
      if (placement.kind === "hold") break;
      this.queue.shift();
      head.held = false;
      settled.push({ ticket: head, placement: this.commit(head, placement) as Settled<J>["placement"] });
    }
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
  shutdown(): Settled<J>[] {
    return this.queue.clear().map((ticket) => {
      ticket.held = false;
      return { ticket, placement: this.commit(ticket, { kind: "fail", failure: failures.shuttingDown() }) as Settled<J>["placement"] };
    });
  }

  /** Whether another target may still be tried (transport conditions are the shell's to add). */
  mayRetry(ticket: Ticket<J>): boolean {
    return ticket.attempts < MAX_ATTEMPTS && !ticket.done;
  }

  /** The current target failed before any byte reached the client: release it, exclude it, place again. */
  retry(ticket: Ticket<J>, now: number): Placement {
    const target = ticket.target;
    this.release(ticket);
    if (target) (ticket.excluded ??= new Set()).add(target.id);
    ticket.target = null;
    return this.route(ticket, now);
  }

  /** The request no longer occupies its replica (response ended, failed, or retried elsewhere). */
  release(ticket: Ticket<J>): void {
    const target = ticket.target;
    if (!target || target.released) return;
    target.released = true;
    if (target.kind !== "replica") return;
    const replica = this.replicas.get(target.id);
    if (!replica) return;
    replica.inFlight = Math.max(0, replica.inFlight - 1);
    replica.queuedTokens = Math.max(0, replica.queuedTokens - ticket.view.inputTokens);
  }

  /** Response headers arrived: what to learn (the prompt, on 2xx). */
  headersReceived(ticket: Ticket<J>, status: number): LearnInstruction | null {
    return headersLearning(ticket, status);
  }

  /** The request ended (served, failed or refused): releases it, calibrates the token estimate,
   * records accuracy and totals, and returns the completion (telemetry event, next-turn learning). */
  complete(ticket: Ticket<J>, outcome: Outcome): Completion {
    this.release(ticket);
    ticket.done = true;
    this.totals.requests++;
    if (outcome.status >= 400) this.totals.errors++;
    const promptTokens = outcome.usage?.promptTokens;
    if (promptTokens != null && ticket.promptChars !== null) this.estimator.observe(ticket.promptChars, promptTokens);
    const target = ticket.target;
    const replica = target?.kind === "replica" ? (this.replicas.get(target.id) ?? null) : null;
    return completeTicket({ lbId: this.config.lbId, region: this.config.region, replica, lbPrediction: this.prediction }, ticket, outcome);
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
    return buildLbState(this.sources(), now, { ...extras, totals: { ...this.totals } });
  }

  /** Models served, for GET /v1/models. Per model: its replicas, how many pass their probes whatever their state, and how many take new
   * requests (healthy and enabled: a draining replica is healthy but takes none). */
  models(): { id: string; replicas: number; healthy: number; serving: number }[] {
    const byModel = new Map<string, { id: string; replicas: number; healthy: number; serving: number }>();
    for (const r of this.replicas.values()) {
      const entry = byModel.get(r.config.model) ?? { id: r.config.model, replicas: 0, healthy: 0, serving: 0 };
      entry.replicas++;
      if (r.healthy) entry.healthy++;
      if (r.routable()) entry.serving++;
      byModel.set(r.config.model, entry);
    }
    return [...byModel.values()];
  }

  flushIndex(): void {
    this.index.clear();
    this.peerIndex.clear();
  }

  // ---------------------------------------------------------------- internals

  private sources(): ReportSources {
    return {
      config: this.config,
      replicas: this.replicas,
      peers: this.peers,
      peerPollIntervalMs: this.peerPollIntervalMs,
      index: this.index,
      queue: this.queue,
    };
  }

  private plan(ticket: Ticket<J>, now: number): Placement {
    // Refreshed in place rather than rebuilt: plan() runs once per request and per queue retry.
    const ctx = this.placementContext;
    ctx.config = this.config;
    ctx.policy = this.policy;
    ctx.index = this.index;
    ctx.peerIndex = this.peerIndex;
    try {
      return planPlacement(ctx, ticket, now);
    } catch (error) {
      // A routing bug must fail one request, not the LB.
      return { kind: "fail", failure: failures.routingError(error) };
    }
  }

  /** Records a placement's effect on this LB's counters and logs it. */
  private commit(ticket: Ticket<J>, placement: Placement): Placement {
    if (placement.kind === "replica") {
      const replica = this.replicas.get(placement.replicaId);
      if (replica) {
        replica.inFlight++;
        replica.queuedTokens += ticket.view.inputTokens;
      }
      ticket.attempts++;
      ticket.target = {
        kind: "replica",
        id: placement.replicaId,
        predictedCachedTokens: placement.decision.predictedCachedTokens,
        reason: placement.decision.reason ?? null,
        released: false,
      };
    } else if (placement.kind === "peer") {
      this.totals.forwarded++;
      ticket.attempts++;
      ticket.target = { kind: "peer", id: placement.peerId, predictedCachedTokens: 0, reason: placement.reason, released: false };
    }
    this.log(ticket, placement, placement.kind === "replica" ? placement.candidates : []);
    return placement;
  }

  private log(ticket: Ticket<J>, placement: Placement, candidates: readonly CandidateView[]): void {
    this.onPlacement?.(placementLogEntry(this.config.lbId, ticket, placement), candidates, ticket);
  }
}
