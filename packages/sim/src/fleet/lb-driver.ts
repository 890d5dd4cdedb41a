// The simulator's LB model: one LbCore (@meridian/lb-core) per simulated LB, driven on the virtual
// clock. It is the simulator's counterpart of the proxy's Balancer: it feeds each core what its
// probes, scrapes and peer polls would have found, admits requests, and acts on what the core
// returns. Where the proxy does HTTP, this calls an LbTransport: the fleet's event loop implements it
// with network delays and engine models; a scripted scenario implements it with scripted engines.
import {
  DEFAULT_PEER_SNAPSHOT_KEYS,
  LbCore,
  type CacheModel,
  type AdmitInput,
  type Completion,
  type Failure,
  type Outcome,
  type Placement,
  type PlacementLogEntry,
  type Ticket,
} from "@meridian/lb-core";
import { DEFAULT_LIMITS, DEFAULT_PROBES, DEFAULT_SESSION_KEY_BLOCKS, LB_CONFIG_SCHEMA, type LbConfig, type Limits, type Probes } from "@meridian/protocol";
import type { CandidateView, CrossRegionMode, EngineCacheScrape, PolicyName, PrefixMatcher, ReplicaStateName, ScrapedLoad, Weights } from "@meridian/routing";

/** One LB's part in a request: a flight forwarded to a peer has two legs (entry LB, peer LB). */
export interface Leg<F> {
  readonly flight: F;
  readonly lb: SimLb<F>;
  ticket: Ticket<Leg<F>>;
  /** Virtual time the request reached this LB. */
  readonly arrivedAt: number;
  /** Set when this LB refused the request (queue full, wait exceeded, no replica). */
  refusal: Failure | null;
}

export interface SimLb<F> {
  readonly idx: number;
  readonly id: string;
  readonly region: string;
  readonly core: LbCore<Leg<F>>;
  /** The expiry wake-up the transport was last asked for (null: none). */
  wakeAt: number | null;
}

/** What the LB model asks of the world around it. */
export interface LbTransport<F> {
  /** Send the request to a replica; the engine side answers with headers() and done(). */
  toReplica(leg: Leg<F>, replicaId: string, now: number): void;
  /** Forward the request to a peer LB (hop 1); the peer's answer comes back as headers() and done(). */
  toPeer(leg: Leg<F>, peer: SimLb<F>, now: number): void;
  /** The LB answered the request (served or refused): to its client, or to the LB that forwarded it. */
  answered(leg: Leg<F>, completion: Completion, now: number): void;
  /** Wake this LB at `at` (expire its held requests); a later call replaces an earlier one. */
  wakeAt(lb: SimLb<F>, at: number): void;
}

export interface SimReplicaSpec {
  id: string;
  region: string;
  /** Default SIM_MODEL (trace requests name no model). */
  model?: string;
  state?: ReplicaStateName;
}

export interface SimLbSpec {
  id: string;
  region: string;
  policy: PolicyName;
  weights: Weights;
  crossRegion: CrossRegionMode;
  /** A standing trial (LbSpec.trial). */
  trial?: NonNullable<LbConfig["trial"]>;
  /** The replicas in this LB's config; default: every replica of the fleet. */
  replicas?: readonly SimReplicaSpec[];
}

export interface LbDriverSettings {
  replicas: readonly SimReplicaSpec[];
  lbs: readonly SimLbSpec[];
  limits?: Partial<Pick<Limits, "queueMaxLength" | "queueMaxWaitMs" | "peerQueueTau">>;
  probes: Partial<Probes> & { rttIntervalMs: number; scrapeIntervalMs: number };
  index: { capacityBlocks: number; ttlMs: number };
  peerPollIntervalMs: number;
  /** How each LB's index models the engines' caches (default `learned`). */
  cacheModel?: CacheModel;
  /** The oracle every LB's policy reads instead of its index (`--index oracle`). */
  matcher?: PrefixMatcher;
  /** Seed per LB (policy tie-breaks and random policies). */
  seedFor(lbIdx: number): number;
  onPlacement?: (lb: SimLb<unknown>, entry: PlacementLogEntry, candidates: readonly CandidateView[], leg: Leg<unknown>) => void;
}

/** The model every simulated replica serves: trace requests name none. */
export const SIM_MODEL = "meridian-sim";

/** The LbConfig a simulated LB runs: every replica of the fleet, every other LB as a peer. Built, not
 * parsed: experiments may set weights the wire contract refuses (W_queue = 0, Appendix D). */
export function simLbConfig(settings: LbDriverSettings, lb: SimLbSpec): LbConfig {
  return {
    schema: LB_CONFIG_SCHEMA,
    version: 1,
    lbId: lb.id,
    region: lb.region,
    policy: lb.policy,
    weights: lb.weights,
    crossRegion: lb.crossRegion,
    sessionKeyBlocks: DEFAULT_SESSION_KEY_BLOCKS,
    replicas: (lb.replicas ?? settings.replicas).map((r) => ({
      id: r.id,
      url: simUrl("replica", r.id),
      region: r.region,
      model: r.model ?? SIM_MODEL,
      engine: "sglang",
      state: r.state ?? "enabled",
    })),
    peers: settings.lbs.filter((p) => p.id !== lb.id).map((p) => ({ id: p.id, url: simUrl("lb", p.id), region: p.region, credentialHashes: [] })),
    limits: { ...DEFAULT_LIMITS, ...settings.limits },
    probes: { ...DEFAULT_PROBES, ...settings.probes },
    index: { ...settings.index },
    // Simulated clients are anonymous: client keys are an access control, not a routing input.
    clientAuth: { required: false, keys: [] },
    ...(lb.trial ? { trial: { ...lb.trial, candidate: { ...lb.trial.candidate } } } : {}),
  };
}

function simUrl(kind: string, id: string): string {
  return `http://sim.invalid/${kind}/${encodeURIComponent(id)}`;
}

export class LbDriver<F> {
  readonly lbs: SimLb<F>[];
  private readonly byId = new Map<string, SimLb<F>>();

  constructor(
    settings: LbDriverSettings,
    private readonly transport: LbTransport<F>,
  ) {
    this.lbs = settings.lbs.map((spec, idx) => {
      const observe = settings.onPlacement;
      let lb: SimLb<F> | undefined;
      const core = new LbCore<Leg<F>>({
        config: simLbConfig(settings, spec),
        seed: settings.seedFor(idx),
        peerPollIntervalMs: settings.peerPollIntervalMs,
        ...(settings.cacheModel ? { cacheModel: settings.cacheModel } : {}),
        ...(settings.matcher ? { matcher: settings.matcher } : {}),
        ...(observe ? { onPlacement: (entry, candidates, ticket) => observe(lb as SimLb<unknown>, entry, candidates, ticket.owner as Leg<unknown>) } : {}),
      });
      lb = { idx, id: spec.id, region: spec.region, core, wakeAt: null };
      this.byId.set(spec.id, lb);
      return lb;
    });
  }

  lb(id: string): SimLb<F> {
    const lb = this.byId.get(id);
    if (!lb) throw new Error(`no simulated LB ${id}`);
    return lb;
  }

  // ---- what probes, scrapes and peer polls find

  probed(lb: SimLb<F>, replicaId: string, sampleMs: number, now: number): void {
    lb.core.probeSucceeded(replicaId, sampleMs);
    this.drain(lb, now);
  }

  probeFailed(lb: SimLb<F>, replicaId: string, now: number): void {
    lb.core.probeFailed(replicaId);
    this.drain(lb, now);
  }

  /** A scrape's result; `cache` is what the engine's metrics say of its KV pool and process. */
  scraped(lb: SimLb<F>, replicaId: string, load: ScrapedLoad, now: number, cache: EngineCacheScrape | null = null): void {
    lb.core.scrapeSucceeded(replicaId, load, now, cache);
    this.drain(lb, now);
  }

  /** `lb` polled `peer`: the report the peer built when the poll reached it, and the poll's RTT. */
  peerPolled(lb: SimLb<F>, report: ReturnType<LbCore<unknown>["peerReport"]>, rttSampleMs: number, now: number): void {
    lb.core.peerReported(report.lbId, report, rttSampleMs, now);
    this.drain(lb, now);
  }

  /** What `peer` reports to `lb` at `now` (the snapshot size is what `lb` asks for). */
  peerReport(peer: SimLb<F>, lb: SimLb<F>, now: number): ReturnType<LbCore<unknown>["peerReport"]> {
    return peer.core.peerReport(now, lb.core.snapshotKeysWanted(DEFAULT_PEER_SNAPSHOT_KEYS));
  }

  /** The wake-up asked for by wakeAt(): expire held requests, place what can go. */
  wake(lb: SimLb<F>, now: number): void {
    if (lb.wakeAt !== null && lb.wakeAt <= now) lb.wakeAt = null;
    this.drain(lb, now);
  }

  /** A config push (the tuner's new weights). */
  applyConfig(lb: SimLb<F>, next: LbConfig, now: number): void {
    lb.core.applyConfig(next);
    this.drain(lb, now);
  }

  // ---- the request path

  /** A request reaches `lb` (hop 0 from a client, hop 1 from a peer LB). Route it with route(); the
   * two steps let the caller file the leg before the LB acts on it. */
  admit(lb: SimLb<F>, flight: F, input: AdmitInput, now: number): Leg<F> {
    const leg = { flight, lb, arrivedAt: now, refusal: null } as Omit<Leg<F>, "ticket"> as Leg<F>;
    leg.ticket = lb.core.admit(leg, input, now);
    return leg;
  }

  route(leg: Leg<F>, now: number): void {
    this.act(leg, leg.lb.core.route(leg.ticket, now), now);
    this.armWake(leg.lb);
  }

  /** Response headers reached the leg's LB. False when it retried elsewhere (a 502/503/504 from a peer). */
  headers(leg: Leg<F>, status: number, now: number): boolean {
    const core = leg.lb.core;
    if (core.mayRetryAfterStatus(leg.ticket, status)) {
      this.act(leg, core.retry(leg.ticket, now), now);
      this.armWake(leg.lb);
      return false;
    }
    const learn = core.headersReceived(leg.ticket, status, now);
    if (learn) core.learn(learn, now);
    return true;
  }

  /** The response ended at the leg's LB. */
  done(leg: Leg<F>, outcome: Outcome, now: number): Completion {
    const core = leg.lb.core;
    const completion = core.complete(leg.ticket, outcome, now);
    if (completion.learn) core.learn(completion.learn, now);
    this.transport.answered(leg, completion, now);
    this.drain(leg.lb, now);
    return completion;
  }

  // ---- internals

  private drain(lb: SimLb<F>, now: number): void {
    if (lb.core.queue.length === 0) return;
    for (const { ticket, placement } of lb.core.drain(now)) this.act(ticket.owner, placement, now);
    this.armWake(lb);
  }

  private armWake(lb: SimLb<F>): void {
    const at = lb.core.nextExpiryAt();
    if (at === null || at === lb.wakeAt) return;
    lb.wakeAt = at;
    this.transport.wakeAt(lb, at);
  }

  private act(leg: Leg<F>, placement: Placement, now: number): void {
    switch (placement.kind) {
      case "hold":
        return;
      case "replica":
        return this.transport.toReplica(leg, placement.replicaId, now);
      case "peer":
        // In virtual time a forward leaves at once: no connection pool to wait in.
        leg.lb.core.forwardLeft(leg.ticket, now);
        return this.transport.toPeer(leg, this.lb(placement.peerId), now);
      case "fail": {
        if (placement.failure.cause !== undefined) throw placement.failure.cause;
        leg.refusal = placement.failure;
        const refused: Outcome = {
          status: placement.failure.status,
          error: placement.failure.message,
          usage: null,
          reply: "",
          outputEvents: 0,
          ttftMs: null,
          e2eMs: now - leg.arrivedAt,
        };
        this.done(leg, refused, now);
      }
    }
  }
}
