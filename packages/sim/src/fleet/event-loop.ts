// The fleet simulator's event loop: clients, LBs and engine replicas on one virtual clock, with the
// network delays applied where they occur:
//   client ──½ RTT(client, LB)──► LB (LbDriver → LbCore: route, forward ──½ RTT(LB, peer)──► peer LB, or hold)
//   ──½ RTT(LB, replica)──► engine (EngineModel: queue, prefill, decode) ──first token, ½ RTT──► LB (index
//   learns at the "2xx headers") ──► client TTFT;  engine done ──½ RTT──► LB (completion bookkeeping,
//   telemetry → tuner) ──► client E2E. A forwarded request's answers travel back through the entry LB.
// Clients send open loop at each request's arrival time, except a generator session's turn, whose
// client first waits for the previous turn's answer (SimRequest.afterId), as the live replay does.
// The LBs decide only from what a live LB would know: probe RTT samples (EWMA in the core), metric
// scrapes (sampled at the replica half an RTT after they are sent, known at the LB a full RTT after),
// peer reports (built when a poll reaches the peer, known at the poller a poll RTT after) and their own
// counters. Views are therefore stale exactly as in production.
import type { AdmitInput, Completion } from "@meridian/lb-core";
import type { LbConfig } from "@meridian/protocol";
import { createRng, DEFAULT_WEIGHTS, type EngineCacheScrape, type Rng, type ScrapedLoad } from "@meridian/routing";
import { EngineModel, withBlockTokens, type EngineEvent } from "../engine";
import { EventQueue } from "./event-queue";
import { OracleIndex } from "./oracle-index";
import { LbDriver, type Leg, type LbTransport, type SimLb } from "./lb-driver";
import { RunRecords } from "./records";
import { rttBetween, type FleetSpec } from "./spec";
import type { Flight, ReplicaState } from "./flight";
import type { FleetRunOptions, TimeSlotSplit } from "./run-options";
import { mixSeed } from "./seeds";
import { TunerDriver } from "./tuner-driver";
import type { SimRequest } from "./workload";

enum Kind {
  ArriveLb,
  Submit,
  EngineWake,
  FirstAtLb,
  DoneAtLb,
  ProbeSend,
  ProbeResult,
  ScrapeSample,
  ScrapeResult,
  PeerPoll,
  PeerReport,
  LbWake,
  SlotStart,
}

type SimEvent =
  | { k: Kind.ArriveLb; f: Flight; lb: SimLb<Flight>; hop: number }
  | { k: Kind.Submit; f: Flight; rep: ReplicaState }
  | { k: Kind.EngineWake; rep: ReplicaState; gen: number }
  | { k: Kind.FirstAtLb; leg: Leg<Flight> }
  | { k: Kind.DoneAtLb; leg: Leg<Flight>; status: number; error: string | null }
  | { k: Kind.ProbeSend; lb: SimLb<Flight>; rep: ReplicaState }
  | { k: Kind.ProbeResult; lb: SimLb<Flight>; rep: ReplicaState; sampleMs: number }
  | { k: Kind.ScrapeSample; lb: SimLb<Flight>; rep: ReplicaState }
  | { k: Kind.ScrapeResult; lb: SimLb<Flight>; rep: ReplicaState; load: ScrapedLoad; cache: EngineCacheScrape }
  | { k: Kind.PeerPoll; lb: SimLb<Flight>; peer: SimLb<Flight> }
  | { k: Kind.PeerReport; lb: SimLb<Flight>; report: ReturnType<LbDriver<Flight>["peerReport"]>; sampleMs: number }
  | { k: Kind.LbWake; lb: SimLb<Flight> }
  | { k: Kind.SlotStart; slot: number };

export class FleetRun implements LbTransport<Flight> {
  private readonly queue = new EventQueue<SimEvent>();
  readonly replicas: ReplicaState[];
  private readonly replicaById = new Map<string, ReplicaState>();
  readonly driver: LbDriver<Flight>;
  /** The tuner of each LB (by LB index), shared by all LBs with scope "fleet". */
  readonly tunerOf: (TunerDriver | null)[];
  /** Each tuner once. */
  readonly tuners: TunerDriver[];
  private readonly entryByRegion = new Map<string, SimLb<Flight>>();
  private readonly halfRtt: number[][]; // [lbIdx][replicaIdx], ms
  private readonly jitterRng: Rng;
  readonly records: RunRecords;
  /** Generator turns not sent yet, by the id of the request whose answer their client waits for. */
  private readonly heldTurns = new Map<number, SimRequest[]>();
  private now = 0;
  private readonly timeSlots: TimeSlotSplit | null;
  private readonly admitInput: AdmitInput & { clientRegion: string; inputTokens: number; tokensPerBlock: number } = {
    keys: [],
    sessionKey: "",
    model: null,
    hop: 0,
    clientRegion: "",
    inputTokens: 0,
    tokensPerBlock: 1,
    // The simulated engines report the cached blocks of these trace keys exactly, full hits whole.
    exactCachedReports: true,
  };

  constructor(
    private readonly spec: FleetSpec,
    private readonly requests: readonly SimRequest[],
    options: FleetRunOptions,
  ) {
    const seed = options.seed;
    this.jitterRng = createRng(mixSeed(seed, 0x5eed));
    // The engines' cache blocks are the workload's (one block size per trace), its size in tokens kept.
    const blockTokens = requests[0]?.tokensPerBlock;
    const engineParams = (r: FleetSpec["replicas"][number]) => {
      const params = { ...spec.engine, ...r.engine, maxOutputTokens: Math.max(spec.maxOutputTokens, 1) };
      return blockTokens === undefined ? params : withBlockTokens(params, blockTokens);
    };
    this.replicas = spec.replicas.map((r, idx) => ({
      idx,
      id: r.id,
      region: r.region,
      engine: new EngineModel(r.id, engineParams(r)),
      wakeAt: Infinity,
      wakeGen: 0,
      flights: new Map(),
      scrapes: 0,
      scrapesWithWaiting: 0,
    }));
    for (const rep of this.replicas) this.replicaById.set(rep.id, rep);
    const initialWeights = options.weights ?? { ...DEFAULT_WEIGHTS };
    const tunerOptions = options.tuner;
    if (options.timeSlots && tunerOptions) throw new Error("a time-slot split and a tuner both set the LBs' weights: choose one");
    if (options.timeSlots && !(options.timeSlots.slotMs > 0)) throw new Error(`timeSlots.slotMs must be > 0, received ${options.timeSlots.slotMs}`);
    this.timeSlots = options.timeSlots ?? null;
    if (!tunerOptions) this.tunerOf = spec.lbs.map(() => null);
    else if (tunerOptions.scope === "fleet") {
      const fleet = new TunerDriver(
        "fleet",
        spec.lbs.map((lb) => lb.id),
        tunerOptions,
        mixSeed(seed, 0x7a11),
        initialWeights,
      );
      this.tunerOf = spec.lbs.map(() => fleet);
    } else this.tunerOf = spec.lbs.map((lb, idx) => new TunerDriver(lb.id, [lb.id], tunerOptions, mixSeed(seed, 0x7a11 + idx), initialWeights));
    this.tuners = [...new Set(this.tunerOf.filter((t): t is TunerDriver => t !== null))];
    const onDecision = options.onDecision;
    this.driver = new LbDriver<Flight>(
      {
        replicas: spec.replicas,
        lbs: spec.lbs.map((lb, idx) => ({
          id: lb.id,
          region: lb.region,
          policy: options.policy ?? lb.policy,
          weights: { ...(this.tunerOf[idx] ? initialWeights : (lb.weights ?? initialWeights)) },
          crossRegion: lb.crossRegion ?? "direct",
          ...(lb.trial && !this.tunerOf[idx] ? { trial: lb.trial } : {}),
        })),
        ...(spec.lbLimits ? { limits: spec.lbLimits } : {}),
        probes: { rttIntervalMs: spec.probeIntervalMs, scrapeIntervalMs: spec.scrapeIntervalMs },
        index: spec.index,
        peerPollIntervalMs: spec.peerSyncIntervalMs,
        cacheModel: options.index === "static" ? "static" : "learned",
        ...(options.index === "oracle" ? { matcher: new OracleIndex(new Map(this.replicas.map((r) => [r.id, r.engine]))) } : {}),
        seedFor: (idx) => mixSeed(seed, 0x1b00 + idx),
        ...(onDecision
          ? {
              onPlacement: (lb, entry, candidates, leg) => {
                if (entry.outcome !== "replica" || entry.target === null) return;
                onDecision({
                  nowMs: this.now,
                  lb: lb.id,
                  requestId: (leg.flight as Flight).req.id,
                  choice: entry.target,
                  views: candidates.map((c) => {
                    const load = this.replicaById.get(c.id)!.engine.load();
                    const scraped = c.scraped ? { ...c.scraped } : null;
                    return {
                      replica: c.id,
                      scraped,
                      inFlight: c.inFlight,
                      queuedTokens: c.queuedTokens,
                      rttMs: c.rttMs,
                      actualRunning: load.running,
                      actualWaiting: load.waiting,
                    };
                  }),
                });
              },
            }
          : {}),
      },
      this,
    );
    // Each tuned LB starts on its tuner's config (its trial, in A/B mode).
    this.driver.lbs.forEach((lb, idx) => this.pushTunerConfig(lb, this.tunerOf[idx] ?? null, 0));
    for (const lb of this.driver.lbs) if (!this.entryByRegion.has(lb.region)) this.entryByRegion.set(lb.region, lb);
    this.halfRtt = this.driver.lbs.map((lb) => this.replicas.map((rep) => rttBetween(spec, lb.region, rep.region) / 2));
    this.records = new RunRecords(requests.length, options);
  }

  run(): void {
    const total = this.requests.length;
    const earlier = new Set<number>();
    for (const req of this.requests) {
      if (req.afterId === undefined) this.send(req, req.arrivalMs);
      else if (!earlier.has(req.afterId)) {
        throw new Error(
          `request ${req.id} waits for request ${req.afterId}, which is not an earlier request of this workload (renumbered or cut without its turns?)`,
        );
      } else this.heldTurns.set(req.afterId, [...(this.heldTurns.get(req.afterId) ?? []), req]);
      earlier.add(req.id);
    }
    // The LBs were up before the first request: the first probe, scrape and peer report land before
    // t = first arrival (1 ms early: at equal times the first arrival, queued earlier, would pop first),
    // so no decision is made blind. Later ones follow at their intervals.
    const start = total > 0 ? this.requests[0]!.arrivalMs : 0;
    for (const lb of this.driver.lbs) {
      for (const rep of this.replicas) {
        const half = this.halfRtt[lb.idx]![rep.idx]!;
        this.queue.push(start - 2 * half * (1 + this.spec.rttJitter) - 1, { k: Kind.ProbeSend, lb, rep });
        this.queue.push(start - half - 1, { k: Kind.ScrapeSample, lb, rep });
      }
      for (const peer of this.driver.lbs) {
        if (peer !== lb) this.queue.push(start - rttBetween(this.spec, lb.region, peer.region) * (1 + this.spec.rttJitter) - 1, { k: Kind.PeerPoll, lb, peer });
      }
    }
    if (this.timeSlots) this.queue.push(start - 1, { k: Kind.SlotStart, slot: 0 });
    while (this.records.settled < total) {
      const item = this.queue.pop();
      if (item === undefined) throw new Error(`simulation stalled with ${total - this.records.settled} requests unfinished`);
      this.now = item.time;
      this.handle(item.event);
    }
  }

  private get running(): boolean {
    return this.records.settled < this.requests.length;
  }

  private handle(ev: SimEvent): void {
    switch (ev.k) {
      case Kind.ArriveLb:
        return this.arriveAtLb(ev.f, ev.lb, ev.hop);
      case Kind.Submit:
        return this.submit(ev.f, ev.rep);
      case Kind.EngineWake:
        if (ev.gen !== ev.rep.wakeGen) return; // superseded by a later reschedule
        ev.rep.wakeAt = Infinity;
        return this.advanceEngine(ev.rep);
      case Kind.FirstAtLb:
        return this.firstAtLb(ev.leg);
      case Kind.DoneAtLb:
        return this.doneAtLb(ev.leg, ev.status, ev.error);
      case Kind.ProbeSend:
        return this.probeSend(ev.lb, ev.rep);
      case Kind.ProbeResult:
        return this.driver.probed(ev.lb, ev.rep.id, ev.sampleMs, this.now);
      case Kind.ScrapeSample:
        return this.scrapeSample(ev.lb, ev.rep);
      case Kind.ScrapeResult:
        return this.driver.scraped(ev.lb, ev.rep.id, ev.load, this.now, ev.cache);
      case Kind.PeerPoll:
        return this.peerPoll(ev.lb, ev.peer);
      case Kind.PeerReport:
        return this.driver.peerPolled(ev.lb, ev.report, ev.sampleMs, this.now);
      case Kind.LbWake:
        return this.driver.wake(ev.lb, this.now);
      case Kind.SlotStart:
        return this.startSlot(ev.slot);
    }
  }

  // ---- clients and LBs (LbTransport) -----------------------------------------------------------------

  private entryLb(region: string): SimLb<Flight> {
    const local = this.entryByRegion.get(region);
    if (local) return local;
    let best = this.driver.lbs[0]!;
    for (const lb of this.driver.lbs) {
      if (rttBetween(this.spec, region, lb.region) < rttBetween(this.spec, region, best.region)) best = lb;
    }
    return best;
  }

  private clientHalfRtt(clientRegion: string, lb: SimLb<Flight>): number {
    return clientRegion === lb.region ? this.spec.localClientRttMs / 2 : rttBetween(this.spec, clientRegion, lb.region) / 2;
  }

  private lbHalfRtt(a: SimLb<Flight>, b: SimLb<Flight>): number {
    return rttBetween(this.spec, a.region, b.region) / 2;
  }

  /** The client sends `req` at `at`: it reaches its region's LB half a client RTT later. */
  private send(req: SimRequest, at: number): void {
    const lb = this.entryLb(req.clientRegion);
    const f: Flight = { req, sentMs: at, entry: null, serving: null, replica: null, entryFirstMs: NaN, servingFirstMs: NaN, cachedTokens: 0, itlMs: NaN };
    this.queue.push(at + this.clientHalfRtt(req.clientRegion, lb), { k: Kind.ArriveLb, f, lb, hop: 0 });
  }

  private arriveAtLb(f: Flight, lb: SimLb<Flight>, hop: number): void {
    const { req } = f;
    // One input object refilled per arrival: admit() copies what it keeps (12k arrivals a run).
    const input = this.admitInput;
    input.keys = req.keys;
    input.sessionKey = req.sessionKey;
    input.hop = hop;
    // A forward names the LB it entered at and its policy, as a live LB's forward does (tuners read them).
    if (hop > 0 && f.entry !== null) input.entry = { lbId: f.entry.lb.id, policy: f.entry.ticket.policy };
    else delete input.entry;
    input.clientRegion = req.clientRegion;
    input.inputTokens = req.inputTokens;
    input.tokensPerBlock = req.tokensPerBlock;
    const leg = this.driver.admit(lb, f, input, this.now);
    if (hop === 0) f.entry = leg;
    this.driver.route(leg, this.now);
  }

  toReplica(leg: Leg<Flight>, replicaId: string, now: number): void {
    const rep = this.replicaById.get(replicaId);
    if (rep === undefined) throw new Error(`LB ${leg.lb.id} chose unknown replica ${replicaId}`);
    const f = leg.flight;
    f.serving = leg;
    f.replica = rep;
    this.queue.push(now + this.halfRtt[leg.lb.idx]![rep.idx]!, { k: Kind.Submit, f, rep });
  }

  toPeer(leg: Leg<Flight>, peer: SimLb<Flight>, now: number): void {
    this.queue.push(now + this.lbHalfRtt(leg.lb, peer), { k: Kind.ArriveLb, f: leg.flight, lb: peer, hop: leg.ticket.hop + 1 });
  }

  answered(leg: Leg<Flight>, completion: Completion, now: number): void {
    const f = leg.flight;
    if (this.tuners.length > 0) {
      const event = completion.telemetry();
      for (const tuner of this.tuners) {
        if (!tuner.observe(event, now)) continue;
        for (const lb of this.driver.lbs) if (this.tunerOf[lb.idx] === tuner) this.pushTunerConfig(lb, tuner, now);
      }
    }
    if (leg.ticket.hop > 0) {
      // A peer LB answered the LB that forwarded to it.
      const entry = f.entry!;
      const { status, error } = completion.outcome;
      this.queue.push(now + this.lbHalfRtt(leg.lb, entry.lb), { k: Kind.DoneAtLb, leg: entry, status, error });
      return;
    }
    const clientHalfMs = this.clientHalfRtt(f.req.clientRegion, leg.lb);
    this.records.answered(f, completion, now, clientHalfMs);
    // The answer (a reply or a refusal) reaches the client: its session's next turn may go, at once
    // when it was already due (the live replay's turnWaitMs), else at its due time.
    const next = this.heldTurns.get(f.req.id);
    if (next === undefined) return;
    this.heldTurns.delete(f.req.id);
    for (const req of next) this.send(req, Math.max(req.arrivalMs, now + clientHalfMs));
  }

  /** A time slot begins: every LB takes the slot's weights (instantaneous in virtual time), and the next slot is due. */
  private startSlot(slot: number): void {
    const split = this.timeSlots!;
    const weights = split.weights[mixSeed(split.salt, slot) & 1]!;
    for (const lb of this.driver.lbs) this.publish(lb, (base) => ({ ...base, weights: { ...weights } }), this.now);
    if (this.running) this.queue.push(this.now + split.slotMs, { k: Kind.SlotStart, slot: slot + 1 });
  }

  /** Publishes the tuner's weights (and trial) to one LB and binds the tuner to that version. */
  private pushTunerConfig(lb: SimLb<Flight>, tuner: TunerDriver | null, now: number): void {
    if (tuner === null) return;
    tuner.bind(this.publish(lb, (base) => tuner.configFor(base), now));
  }

  /** Applies `change` of the LB's config to it as its next config version (instantaneous in virtual time); returns that version. */
  private publish(lb: SimLb<Flight>, change: (base: LbConfig) => LbConfig, now: number): number {
    const base = lb.core.config;
    const version = base.version + 1;
    this.driver.applyConfig(lb, { ...change(base), version }, now);
    return version;
  }

  wakeAt(lb: SimLb<Flight>, at: number): void {
    this.queue.push(at, { k: Kind.LbWake, lb });
  }

  private firstAtLb(leg: Leg<Flight>): void {
    const f = leg.flight;
    if (leg === f.serving) f.servingFirstMs = this.now;
    if (!this.driver.headers(leg, 200, this.now)) return;
    if (leg.ticket.hop > 0) {
      const entry = f.entry!;
      this.queue.push(this.now + this.lbHalfRtt(leg.lb, entry.lb), { k: Kind.FirstAtLb, leg: entry });
      return;
    }
    f.entryFirstMs = this.now;
  }

  private doneAtLb(leg: Leg<Flight>, status: number, error: string | null): void {
    const f = leg.flight;
    // A refusal from a peer is the first the entry LB hears: a 5xx may be retried elsewhere.
    if (status >= 400 && !this.driver.headers(leg, status, this.now)) return;
    const first = leg.ticket.hop === 0 ? f.entryFirstMs : f.servingFirstMs;
    const ok = status < 400;
    this.driver.done(
      leg,
      {
        status,
        error,
        usage: ok ? { promptTokens: f.req.inputTokens, completionTokens: f.req.outputTokens, cachedTokens: f.cachedTokens } : null,
        reply: "",
        outputEvents: 0,
        ttftMs: ok && Number.isFinite(first) ? first - leg.arrivedAt : null,
        e2eMs: this.now - leg.arrivedAt,
      },
      this.now,
    );
  }

  // ---- engines ---------------------------------------------------------------------------------------

  private submit(f: Flight, rep: ReplicaState): void {
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
    const leg = f?.serving;
    if (!f || !leg) return;
    const back = ev.time + this.halfRtt[leg.lb.idx]![rep.idx]!;
    f.cachedTokens = ev.cachedTokens;
    if (ev.type === "first-token") {
      this.queue.push(back, { k: Kind.FirstAtLb, leg });
    } else {
      rep.flights.delete(ev.id);
      f.itlMs = ev.meanItlMs;
      this.queue.push(back, { k: Kind.DoneAtLb, leg, status: 200, error: null });
    }
  }

  // ---- probes, scrapes, peer polls ---------------------------------------------------------------------

  private jittered(rttMs: number): number {
    return rttMs * (1 + this.spec.rttJitter * (2 * this.jitterRng.next() - 1));
  }

  private probeSend(lb: SimLb<Flight>, rep: ReplicaState): void {
    const sample = this.jittered(2 * this.halfRtt[lb.idx]![rep.idx]!);
    this.queue.push(this.now + sample, { k: Kind.ProbeResult, lb, rep, sampleMs: sample });
    if (this.running) this.queue.push(this.now + this.spec.probeIntervalMs, { k: Kind.ProbeSend, lb, rep });
  }

  private scrapeSample(lb: SimLb<Flight>, rep: ReplicaState): void {
    this.advanceEngine(rep);
    const load = rep.engine.load();
    rep.scrapes++;
    if (load.waiting > 0) rep.scrapesWithWaiting++;
    const half = this.halfRtt[lb.idx]![rep.idx]!;
    // What the engine's /metrics would say (packages/sim/src/server/metrics.ts): its KV pool, and the
    // token counters that identify its process.
    const cache: EngineCacheScrape = {
      capacityTokens: load.kvCapacityTokens,
      epoch: { startTimeSec: null, counters: { prompt_tokens_total: load.promptTokensTotal, generation_tokens_total: load.generationTokensTotal } },
    };
    this.queue.push(this.now + half, {
      k: Kind.ScrapeResult,
      lb,
      rep,
      load: { running: load.running, waiting: load.waiting, usedTokens: load.usedTokens },
      cache,
    });
    if (this.running) this.queue.push(this.now + this.spec.scrapeIntervalMs, { k: Kind.ScrapeSample, lb, rep });
  }

  /** `lb` polls `peer`: the report is built as the poll reaches the peer and known a poll RTT later. */
  private peerPoll(lb: SimLb<Flight>, peer: SimLb<Flight>): void {
    const sample = this.jittered(2 * this.lbHalfRtt(lb, peer));
    this.queue.push(this.now + sample, { k: Kind.PeerReport, lb, report: this.driver.peerReport(peer, lb, this.now), sampleMs: sample });
    if (this.running) this.queue.push(this.now + this.spec.peerSyncIntervalMs, { k: Kind.PeerPoll, lb, peer });
  }
}
