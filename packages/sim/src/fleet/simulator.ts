// The discrete-event fleet simulator: clients, regional load balancers and engine replicas on one
// virtual clock.
//
// A request's life, with the network delays applied where they occur:
//   client (arrival) ──½ RTT(client, LB)──► LB: policy.select over candidate views ──½ RTT(LB, replica)──►
//   engine (EngineModel: queue, prefill, decode) ──first token──½ RTT──► LB (index learns, "2xx headers")
//   ──½ RTT(client, LB)──► client TTFT;  engine done ──½ RTT──► LB (release queued tokens, index learns,
//   tuner observes) ──½ RTT──► client E2E.
//
// The LB decides only from what a live LB would know: RTTs from periodic probes (EWMA), engine load
// from periodic metric scrapes (sampled at the replica half an RTT after the scrape is sent, and
// known at the LB a full RTT after), and its own in-flight/queued-token bookkeeping. Views are
// therefore stale exactly as in production, and the stale-scrape test checks that.
//
// Policy, prefix index, availability and tuner are the shared implementations from
// @meridian/routing and @meridian/tuner; nothing here decides where a request goes.

import {
  createPolicy,
  createRng,
  decideAvailability,
  isReplicaFull,
  PrefixIndex,
  type CandidateView,
  type CrossRegionMode,
  type Policy,
  type PolicyName,
  type RequestView,
  type Rng,
  type ScrapedLoad,
  type Weights,
  DEFAULT_WEIGHTS,
} from "@meridian/routing";
import { EsTuner, type EvaluationMode, type TunerStep, type WeightBounds } from "@meridian/tuner";
import { EngineModel, type EngineEvent } from "../engine";
import { EventQueue } from "./event-queue";
import { rttBetween, validateFleetSpec, type FleetSpec, type LbSpec } from "./spec";
import { summarize, type FleetSummary, type RequestRecord } from "./summary";
import type { SimRequest } from "./workload";

/** EWMA smoothing of RTT probes (DESIGN.md: α = 0.3, the first sample seeds the average). */
export const RTT_EWMA_ALPHA = 0.3;

export interface TunerRunOptions {
  evaluation: EvaluationMode;
  guardrails: boolean;
  bounds?: WeightBounds;
  /** Samples per evaluation window (default 128). */
  window?: number;
  /** Paper mode: evaluate every `hop` samples (default 32). */
  hop?: number;
}

export interface FleetRunOptions {
  policy: PolicyName;
  /** Name in the output; defaults to the policy name. */
  label?: string;
  /** Cost weights for gorgo (and the tuner's starting point). Defaults to rtt 0.5, queue 0.1. */
  weights?: Weights;
  /** Run the online (1+1)-ES on each LB (gorgo only). */
  tuner?: TunerRunOptions;
  seed: number;
  /** Keep one record per request in the result (for --jsonl). */
  recordRequests?: boolean;
  /** Observes every routing decision with the LB's view next to the engines' true state (tests, debugging). */
  onDecision?: (trace: DecisionTrace) => void;
  /** Called as requests complete, at most ~200 times per run. */
  onProgress?: (done: number, total: number) => void;
}

export interface DecisionTrace {
  nowMs: number;
  lb: string;
  requestId: number;
  choice: string;
  /** Per candidate: what the LB believed (last scrape, its own counts) and what the engine had. */
  views: { replica: string; scraped: ScrapedLoad | null; inFlight: number; queuedTokens: number; rttMs: number; actualRunning: number; actualWaiting: number }[];
}

export interface TunerTrajectoryPoint {
  step: number;
  /** Virtual time the window closed, ms. */
  atMs: number;
  /** Samples the tuner had been fed when this window closed. */
  samplesSeen: number;
  kind: TunerStep["kind"];
  weights: Weights;
  p95TtftMs: number;
  e2eP95Ms: number;
  maxShare: number;
  accepted: boolean;
  guardrail: TunerStep["guardrail"];
  sigma: number;
  incumbent: Weights;
  converged: boolean;
}

export interface TunerReport {
  lb: string;
  evaluation: EvaluationMode;
  guardrails: boolean;
  initialWeights: Weights;
  finalWeights: Weights;
  steps: number;
  /** Samples fed when the final incumbent was first accepted (0 if the initial weights were never beaten). */
  samplesToBest: number;
  samplesSeen: number;
  converged: boolean;
  trajectory: TunerTrajectoryPoint[];
}

export interface FleetRunResult {
  label: string;
  policy: PolicyName;
  summary: FleetSummary;
  tuners: TunerReport[];
  records?: RequestRecord[];
}

// ---------------------------------------------------------------------------------------------------

const enum Kind {
  ArriveLb,
  Submit,
  EngineWake,
  FirstAtLb,
  DoneAtLb,
  ProbeResult,
  ProbeSend,
  ScrapeSample,
  ScrapeResult,
  PeerSync,
}

interface Flight {
  req: SimRequest;
  view: RequestView;
  /** LB the client sent to, and the LB that dispatched (differs when forwarded via a peer). */
  entryLb: LbState;
  lb: LbState;
  replica: ReplicaState;
  forwarded: boolean;
  lbReceiveMs: number;
  dispatchMs: number;
  configVersion: number;
  weights: Weights;
  predictedCachedTokens: number;
  reason: string | undefined;
  firstAtLbMs: number;
  cachedTokens: number;
  itlMs: number;
}

type SimEvent =
  | { k: Kind.ArriveLb; f: Flight; hop: number }
  | { k: Kind.Submit; f: Flight }
  | { k: Kind.EngineWake; rep: ReplicaState; gen: number }
  | { k: Kind.FirstAtLb; f: Flight; cachedTokens: number }
  | { k: Kind.DoneAtLb; f: Flight; cachedTokens: number; itlMs: number }
  | { k: Kind.ProbeSend; lb: LbState; rep: ReplicaState }
  | { k: Kind.ProbeResult; lb: LbState; rep: ReplicaState; sampleMs: number }
  | { k: Kind.ScrapeSample; lb: LbState; rep: ReplicaState }
  | { k: Kind.ScrapeResult; lb: LbState; rep: ReplicaState; load: ScrapedLoad; admitted: number }
  | { k: Kind.PeerSync };

interface ReplicaState {
  idx: number;
  id: string;
  region: string;
  engine: EngineModel;
  wakeAt: number;
  wakeGen: number;
  flights: Map<string, Flight>;
  requests: number;
  scrapes: number;
  scrapesWithWaiting: number;
}

/** What one LB knows about one replica. */
interface LbReplicaView {
  rttEwma: number | null;
  inFlight: number;
  ownQueuedTokens: number;
  peerQueuedTokens: number;
  scraped: ScrapedLoad | null;
  admitted: number | null;
  candidate: CandidateView;
}

interface LbState {
  idx: number;
  spec: LbSpec;
  id: string;
  region: string;
  policy: Policy;
  crossRegion: CrossRegionMode;
  index: PrefixIndex;
  rng: Rng;
  weights: Weights;
  configVersion: number;
  tuner: EsTuner | null;
  tunerSamples: number;
  trajectory: TunerTrajectoryPoint[];
  samplesToBest: number;
  views: LbReplicaView[];
  /** Indices of replicas in this LB's region (the `via-peer` local set). */
  localReplicas: number[];
  /** Requests held because every candidate was full (via-peer mode), FIFO. */
  held: { f: Flight; hop: number }[];
}

/** Runs one policy over a workload on a fleet. Deterministic for (spec, requests, options). */
export function simulateFleet(spec: FleetSpec, requests: readonly SimRequest[], options: FleetRunOptions): FleetRunResult {
  const problems = validateFleetSpec(spec);
  if (problems.length > 0) throw new Error(`invalid fleet spec ${spec.name}: ${problems.join("; ")}`);
  return new FleetRun(spec, requests, options).run();
}

class FleetRun {
  private readonly queue = new EventQueue<SimEvent>();
  private readonly replicas: ReplicaState[];
  private readonly lbs: LbState[];
  private readonly lbByRegion = new Map<string, LbState>();
  private readonly replicaById = new Map<string, ReplicaState>();
  private readonly halfRtt: number[][]; // [lbIdx][replicaIdx], ms
  private readonly jitterRng: Rng;
  private readonly records: (RequestRecord | undefined)[];
  private readonly label: string;
  private completed = 0;
  private now = 0;
  private progressEvery: number;

  constructor(
    private readonly spec: FleetSpec,
    private readonly requests: readonly SimRequest[],
    private readonly options: FleetRunOptions,
  ) {
    this.label = options.label ?? options.policy;
    if (options.tuner && options.policy !== "gorgo") throw new Error(`the online tuner tunes gorgo weights; policy ${options.policy} has none`);
    const seed = options.seed;
    this.jitterRng = createRng(mixSeed(seed, 0x5eed));
    this.replicas = spec.replicas.map((r, idx) => ({
      idx,
      id: r.id,
      region: r.region,
      engine: new EngineModel(r.id, { ...spec.engine, ...r.engine, maxOutputTokens: Math.max(spec.maxOutputTokens, 1) }),
      wakeAt: Infinity,
      wakeGen: 0,
      flights: new Map(),
      requests: 0,
      scrapes: 0,
      scrapesWithWaiting: 0,
    }));
    for (const rep of this.replicas) this.replicaById.set(rep.id, rep);
    const initialWeights = options.weights ?? { ...DEFAULT_WEIGHTS };
    this.lbs = spec.lbs.map((lbSpec, idx) => {
      const policyName = options.policy ?? lbSpec.policy;
      const tuner = options.tuner
        ? new EsTuner(
            {
              seed: mixSeed(seed, 0x7a11 + idx),
              evaluation: options.tuner.evaluation,
              guardrails: { enabled: options.tuner.guardrails, e2eTolerance: 0.25, maxShare: 0.8, maxErrorRate: 0.05 },
              ...(options.tuner.bounds ? { bounds: options.tuner.bounds } : {}),
              ...(options.tuner.window !== undefined ? { window: options.tuner.window } : {}),
              ...(options.tuner.hop !== undefined ? { hop: options.tuner.hop } : {}),
            },
            initialWeights,
          )
        : null;
      const lb: LbState = {
        idx,
        spec: lbSpec,
        id: lbSpec.id,
        region: lbSpec.region,
        policy: createPolicy(policyName),
        crossRegion: lbSpec.crossRegion ?? "direct",
        index: new PrefixIndex({ capacityBlocks: spec.index.capacityBlocks, ttlMs: spec.index.ttlMs }),
        rng: createRng(mixSeed(seed, 0x1b00 + idx)),
        weights: tuner ? tuner.current().weights : { ...(lbSpec.weights ?? initialWeights) },
        configVersion: 1,
        tuner,
        tunerSamples: 0,
        trajectory: [],
        samplesToBest: 0,
        views: this.replicas.map((rep) => ({
          rttEwma: null,
          inFlight: 0,
          ownQueuedTokens: 0,
          peerQueuedTokens: 0,
          scraped: null,
          admitted: null,
          candidate: {
            id: rep.id,
            region: rep.region,
            rttMs: 0,
            inFlight: 0,
            queuedTokens: 0,
            scraped: null,
            full: false,
            healthy: true,
            // Known from the engine's config, as an operator's override would give it live.
            kvCapacityTokens: rep.engine.load().kvCapacityTokens,
          },
        })),
        localReplicas: this.replicas.filter((rep) => rep.region === lbSpec.region).map((rep) => rep.idx),
        held: [],
      };
      tuner?.bind(lb.configVersion);
      if (!this.lbByRegion.has(lb.region)) this.lbByRegion.set(lb.region, lb);
      return lb;
    });
    this.halfRtt = this.lbs.map((lb) => this.replicas.map((rep) => rttBetween(spec, lb.region, rep.region) / 2));
    this.records = new Array(requests.length);
    this.progressEvery = Math.max(1, Math.floor(requests.length / 200));
  }

  run(): FleetRunResult {
    const total = this.requests.length;
    for (const req of this.requests) {
      const lb = this.entryLb(req.clientRegion);
      const f: Flight = {
        req,
        view: {
          keys: req.keys,
          inputTokens: req.inputTokens,
          tokensPerBlock: req.tokensPerBlock,
          sessionKey: req.sessionKey,
          clientRegion: req.clientRegion,
        },
        entryLb: lb,
        lb,
        replica: this.replicas[0]!,
        forwarded: false,
        lbReceiveMs: 0,
        dispatchMs: 0,
        configVersion: 0,
        weights: lb.weights,
        predictedCachedTokens: 0,
        reason: undefined,
        firstAtLbMs: NaN,
        cachedTokens: 0,
        itlMs: NaN,
      };
      this.queue.push(req.arrivalMs + this.clientHalfRtt(req.clientRegion, lb), { k: Kind.ArriveLb, f, hop: 0 });
    }
    // The LBs were up before the first request: the first probe and scrape land at t = 0, so no
    // decision is made blind. Later ones follow at their intervals.
    const start = total > 0 ? this.requests[0]!.arrivalMs : 0;
    for (const lb of this.lbs) {
      for (const rep of this.replicas) {
        const half = this.halfRtt[lb.idx]![rep.idx]!;
        // 1 ms early: at equal times the first arrival (queued earlier) would pop first.
        this.queue.push(start - 2 * half * (1 + this.spec.rttJitter) - 1, { k: Kind.ProbeSend, lb, rep });
        this.queue.push(start - half - 1, { k: Kind.ScrapeSample, lb, rep });
      }
    }
    if (this.lbs.length > 1) this.queue.push(start, { k: Kind.PeerSync });

    while (this.completed < total) {
      const item = this.queue.pop();
      if (item === undefined) throw new Error(`simulation stalled with ${total - this.completed} requests unfinished`);
      this.now = item.time;
      this.handle(item.event);
    }
    const records = this.records as RequestRecord[];
    const summary = summarize(this.label, records, this.replicas.map((r) => ({ id: r.id, scrapes: r.scrapes, scrapesWithWaiting: r.scrapesWithWaiting })));
    const result: FleetRunResult = {
      label: this.label,
      policy: this.options.policy,
      summary,
      tuners: this.lbs.filter((lb) => lb.tuner !== null).map((lb) => this.tunerReport(lb)),
    };
    if (this.options.recordRequests) result.records = records;
    return result;
  }

  private handle(ev: SimEvent): void {
    switch (ev.k) {
      case Kind.ArriveLb:
        return this.arriveAtLb(ev.f, ev.hop);
      case Kind.Submit:
        return this.submit(ev.f);
      case Kind.EngineWake:
        if (ev.gen !== ev.rep.wakeGen) return; // superseded by a later reschedule
        ev.rep.wakeAt = Infinity;
        return this.advanceEngine(ev.rep);
      case Kind.FirstAtLb:
        return this.firstAtLb(ev.f, ev.cachedTokens);
      case Kind.DoneAtLb:
        return this.doneAtLb(ev.f, ev.cachedTokens, ev.itlMs);
      case Kind.ProbeSend:
        return this.probeSend(ev.lb, ev.rep);
      case Kind.ProbeResult:
        return this.probeResult(ev.lb, ev.rep, ev.sampleMs);
      case Kind.ScrapeSample:
        return this.scrapeSample(ev.lb, ev.rep);
      case Kind.ScrapeResult:
        return this.scrapeResult(ev.lb, ev.rep, ev.load, ev.admitted);
      case Kind.PeerSync:
        return this.peerSync();
    }
  }

  // ---- clients and LBs ----------------------------------------------------------------------------

  private entryLb(region: string): LbState {
    const local = this.lbByRegion.get(region);
    if (local) return local;
    let best = this.lbs[0]!;
    for (const lb of this.lbs) {
      if (rttBetween(this.spec, region, lb.region) < rttBetween(this.spec, region, best.region)) best = lb;
    }
    return best;
  }

  private clientHalfRtt(clientRegion: string, lb: LbState): number {
    return clientRegion === lb.region ? this.spec.localClientRttMs / 2 : rttBetween(this.spec, clientRegion, lb.region) / 2;
  }

  private refreshCandidate(lb: LbState, idx: number): CandidateView {
    const v = lb.views[idx]!;
    const c = v.candidate;
    c.rttMs = v.rttEwma ?? 0;
    c.inFlight = v.inFlight;
    c.queuedTokens = v.ownQueuedTokens + v.peerQueuedTokens;
    c.scraped = v.scraped;
    c.full = isReplicaFull({ waiting: v.scraped?.waiting, inFlight: v.inFlight, admittedConcurrency: v.admitted });
    return c;
  }

  private arriveAtLb(f: Flight, hop: number): void {
    const lb = f.forwarded ? f.lb : f.entryLb;
    if (hop === 0) f.lbReceiveMs = this.now;
    let candidates: CandidateView[];
    if (lb.crossRegion === "direct") {
      // GORGO's setting: every replica is a candidate and the cost's RTT term decides. Fullness is
      // reported to the policy but does not filter: the paper's proxy never held requests back.
      candidates = this.replicas.map((rep) => this.refreshCandidate(lb, rep.idx));
    } else {
      const local = lb.localReplicas.map((i) => this.refreshCandidate(lb, i));
      const decision = decideAvailability({ mode: "via-peer", local, peers: this.peerViews(lb), hop });
      if (decision.action === "forward") {
        const peer = this.lbs.find((p) => p.id === decision.peerId)!;
        f.forwarded = true;
        f.lb = peer;
        this.queue.push(this.now + rttBetween(this.spec, lb.region, peer.region) / 2, { k: Kind.ArriveLb, f, hop: hop + 1 });
        return;
      }
      if (decision.action === "queue") {
        lb.held.push({ f, hop });
        return;
      }
      candidates = decision.candidates;
    }
    this.dispatch(lb, f, candidates);
  }

  private peerViews(lb: LbState) {
    return this.lbs
      .filter((p) => p !== lb)
      .map((p) => ({
        id: p.id,
        region: p.region,
        rttMs: rttBetween(this.spec, lb.region, p.region),
        availableReplicas: p.localReplicas.filter((i) => !this.refreshCandidate(p, i).full).length,
        queueLength: p.held.length,
      }));
  }

  /** via-peer: retry held requests in FIFO order while a local replica is available. */
  private drainHeld(lb: LbState): void {
    while (lb.held.length > 0) {
      const local = lb.localReplicas.map((i) => this.refreshCandidate(lb, i));
      const decision = decideAvailability({ mode: "via-peer", local, peers: [], hop: 1 });
      if (decision.action !== "route") return;
      const { f } = lb.held.shift()!;
      this.dispatch(lb, f, decision.candidates);
    }
  }

  private dispatch(lb: LbState, f: Flight, candidates: CandidateView[]): void {
    const decision = lb.policy.select(f.view, candidates, { index: lb.index, weights: lb.weights, rng: lb.rng, now: this.now });
    const rep = this.replicaById.get(decision.choice);
    if (rep === undefined) throw new Error(`policy ${lb.policy.name} chose unknown replica ${decision.choice}`);
    // Policy events (peer routers keep their own state): the LB core is to report these; see
    // packages/routing/src/policies/common.ts (PolicyEvent).
    lb.policy.observe?.({ kind: "dispatch", requestId: String(f.req.id), replicaId: rep.id, request: f.view, decision, now: this.now });
    f.lb = lb;
    f.replica = rep;
    f.dispatchMs = this.now;
    f.configVersion = lb.configVersion;
    f.weights = lb.weights;
    f.predictedCachedTokens = decision.predictedCachedTokens;
    f.reason = decision.reason;
    if (this.options.onDecision) {
      this.options.onDecision({
        nowMs: this.now,
        lb: lb.id,
        requestId: f.req.id,
        choice: rep.id,
        views: candidates.map((c) => {
          const load = this.replicaById.get(c.id)!.engine.load();
          return {
            replica: c.id,
            scraped: c.scraped ? { ...c.scraped } : null,
            inFlight: c.inFlight,
            queuedTokens: c.queuedTokens,
            rttMs: c.rttMs,
            actualRunning: load.running,
            actualWaiting: load.waiting,
          };
        }),
      });
    }
    const v = lb.views[rep.idx]!;
    v.inFlight++;
    v.ownQueuedTokens += f.req.inputTokens;
    rep.requests++;
    this.queue.push(this.now + this.halfRtt[lb.idx]![rep.idx]!, { k: Kind.Submit, f });
  }

  // ---- engines ------------------------------------------------------------------------------------

  private submit(f: Flight): void {
    const rep = f.replica;
    const id = String(f.req.id);
    rep.flights.set(id, f);
    rep.engine.submit({ id, blockKeys: f.req.keys, inputTokens: f.req.inputTokens, maxOutputTokens: f.req.outputTokens }, this.now);
    this.advanceEngine(rep);
  }

  /** Runs the engine to now, relays its events towards the LB, and schedules its next wake-up. */
  private advanceEngine(rep: ReplicaState): void {
    const events = rep.engine.advance(this.now);
    for (const ev of events) this.engineEvent(rep, ev);
    const next = rep.engine.nextEventTime();
    if (next !== rep.wakeAt && Number.isFinite(next)) {
      rep.wakeAt = next;
      rep.wakeGen++;
      this.queue.push(next > this.now ? next : this.now, { k: Kind.EngineWake, rep, gen: rep.wakeGen });
    }
  }

  private engineEvent(rep: ReplicaState, ev: EngineEvent): void {
    if (ev.type === "tokens") return;
    const f = rep.flights.get(ev.id);
    if (!f) return;
    const back = ev.time + this.halfRtt[f.lb.idx]![rep.idx]!;
    if (ev.type === "first-token") {
      this.queue.push(back, { k: Kind.FirstAtLb, f, cachedTokens: ev.cachedTokens });
    } else {
      rep.flights.delete(ev.id);
      this.queue.push(back, { k: Kind.DoneAtLb, f, cachedTokens: ev.cachedTokens, itlMs: ev.meanItlMs });
    }
  }

  private firstAtLb(f: Flight, cachedTokens: number): void {
    f.firstAtLbMs = this.now;
    f.lb.policy.observe?.({ kind: "first-token", requestId: String(f.req.id), now: this.now });
    f.cachedTokens = cachedTokens;
    // Learn on the 2xx headers: the replica now holds (or is computing) this prompt's blocks.
    f.lb.index.learn(f.req.keys, f.replica.id, "LOCAL", this.now);
  }

  private doneAtLb(f: Flight, cachedTokens: number, itlMs: number): void {
    const lb = f.lb;
    const v = lb.views[f.replica.idx]!;
    v.inFlight--;
    v.ownQueuedTokens -= f.req.inputTokens;
    lb.policy.observe?.({ kind: "complete", requestId: String(f.req.id), now: this.now });
    f.cachedTokens = cachedTokens;
    f.itlMs = itlMs;
    // Learn again at completion. A trace row does not say which blocks the reply will become, so
    // this refreshes the prompt's routes (LRU and TTL) rather than adding reply blocks.
    lb.index.learn(f.req.keys, f.replica.id, "LOCAL", this.now);
    const clientHalf = this.clientHalfRtt(f.req.clientRegion, f.entryLb);
    const forwardHalf = f.forwarded ? rttBetween(this.spec, f.entryLb.region, lb.region) / 2 : 0;
    const ttftMs = f.firstAtLbMs + forwardHalf + clientHalf - f.req.arrivalMs;
    const e2eMs = this.now + forwardHalf + clientHalf - f.req.arrivalMs;
    this.records[f.req.id] = {
      id: f.req.id,
      trace_index: f.req.traceIndex,
      arrival_ms: f.req.arrivalMs,
      client_region: f.req.clientRegion,
      lb: lb.id,
      forwarded: f.forwarded,
      replica: f.replica.id,
      replica_region: f.replica.region,
      input_tokens: f.req.inputTokens,
      output_tokens: f.req.outputTokens,
      predicted_cached_tokens: f.predictedCachedTokens,
      cached_tokens: cachedTokens,
      ttft_ms: ttftMs,
      e2e_ms: e2eMs,
      itl_ms: itlMs,
      lb_ttft_ms: f.firstAtLbMs - f.lbReceiveMs,
      config_version: f.configVersion,
      weights: f.weights,
      reason: f.reason ?? null,
    };
    if (lb.tuner) this.feedTuner(lb, f);
    this.completed++;
    if (this.options.onProgress && (this.completed % this.progressEvery === 0 || this.completed === this.requests.length)) {
      this.options.onProgress(this.completed, this.requests.length);
    }
    if (lb.held.length > 0) this.drainHeld(lb);
  }

  private feedTuner(lb: LbState, f: Flight): void {
    const tuner = lb.tuner!;
    lb.tunerSamples++;
    // The LB measures TTFT/E2E itself and streams them to the tuner (as the live telemetry does).
    const step = tuner.observe({
      configVersion: f.configVersion,
      ttftMs: f.firstAtLbMs - f.lbReceiveMs,
      e2eMs: this.now - f.lbReceiveMs,
      replicaId: f.replica.id,
      ok: true,
    });
    if (step === null) return;
    const before = lb.trajectory.length > 0 ? lb.trajectory[lb.trajectory.length - 1]!.incumbent : lb.weights;
    if (step.kind === "candidate" && step.accepted && !sameWeights(before, step.incumbent)) lb.samplesToBest = lb.tunerSamples;
    lb.trajectory.push({
      step: step.step,
      atMs: this.now,
      samplesSeen: lb.tunerSamples,
      kind: step.kind,
      weights: step.weights,
      p95TtftMs: step.fitnessP95TtftMs,
      e2eP95Ms: step.e2eP95Ms,
      maxShare: step.maxShare,
      accepted: step.accepted,
      guardrail: step.guardrail,
      sigma: step.sigma,
      incumbent: step.incumbent,
      converged: step.converged,
    });
    // Publish the tuner's next weights under a new config version; in the simulator the push is
    // instantaneous (the live console pushes over HTTP, a few ms).
    lb.weights = tuner.current().weights;
    lb.configVersion++;
    tuner.bind(lb.configVersion);
  }

  private tunerReport(lb: LbState): TunerReport {
    const tuner = lb.tuner!;
    const state = tuner.state();
    return {
      lb: lb.id,
      evaluation: state.config.evaluation,
      guardrails: state.config.guardrails.enabled,
      initialWeights: state.initial,
      finalWeights: state.incumbent.weights,
      steps: state.step,
      samplesToBest: lb.samplesToBest,
      samplesSeen: lb.tunerSamples,
      converged: state.converged,
      trajectory: lb.trajectory,
    };
  }

  // ---- probes, scrapes, peer sync ------------------------------------------------------------------

  private get running(): boolean {
    return this.completed < this.requests.length;
  }

  private probeSend(lb: LbState, rep: ReplicaState): void {
    const rtt = 2 * this.halfRtt[lb.idx]![rep.idx]!;
    const sample = rtt * (1 + this.spec.rttJitter * (2 * this.jitterRng.next() - 1));
    this.queue.push(this.now + sample, { k: Kind.ProbeResult, lb, rep, sampleMs: sample });
    if (this.running) this.queue.push(this.now + this.spec.probeIntervalMs, { k: Kind.ProbeSend, lb, rep });
  }

  private probeResult(lb: LbState, rep: ReplicaState, sampleMs: number): void {
    const v = lb.views[rep.idx]!;
    v.rttEwma = v.rttEwma === null ? sampleMs : RTT_EWMA_ALPHA * sampleMs + (1 - RTT_EWMA_ALPHA) * v.rttEwma;
  }

  private scrapeSample(lb: LbState, rep: ReplicaState): void {
    this.advanceEngine(rep);
    const load = rep.engine.load();
    rep.scrapes++;
    if (load.waiting > 0) rep.scrapesWithWaiting++;
    const half = this.halfRtt[lb.idx]![rep.idx]!;
    this.queue.push(this.now + half, {
      k: Kind.ScrapeResult,
      lb,
      rep,
      load: { running: load.running, waiting: load.waiting, usedTokens: load.usedTokens },
      admitted: load.admittedConcurrency,
    });
    if (this.running) this.queue.push(this.now + this.spec.scrapeIntervalMs, { k: Kind.ScrapeSample, lb, rep });
  }

  private scrapeResult(lb: LbState, rep: ReplicaState, load: ScrapedLoad, admitted: number): void {
    const v = lb.views[rep.idx]!;
    v.scraped = load;
    v.admitted = admitted;
    if (lb.held.length > 0) this.drainHeld(lb);
  }

  /** Each LB learns the in-flight tokens its peers have on every replica (a heartbeat, so stale too). */
  private peerSync(): void {
    for (const lb of this.lbs) {
      for (const rep of this.replicas) {
        let peers = 0;
        for (const other of this.lbs) if (other !== lb) peers += other.views[rep.idx]!.ownQueuedTokens;
        lb.views[rep.idx]!.peerQueuedTokens = peers;
      }
    }
    if (this.running) this.queue.push(this.now + this.spec.peerSyncIntervalMs, { k: Kind.PeerSync });
  }
}

function sameWeights(a: Weights, b: Weights): boolean {
  return a.rtt === b.rtt && a.queue === b.queue;
}

/** Derives independent sub-seeds (policy tie-breaks, probe jitter, tuner) from one run seed. */
export function mixSeed(seed: number, salt: number): number {
  let h = Math.imul((seed | 0) ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(salt, 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x27d4eb2f);
  h ^= h >>> 15;
  return h >>> 0;
}
