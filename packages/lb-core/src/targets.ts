// What an LB knows about each target it can send a request to: its replicas (config state, health,
// RTT, the last metrics scrape, this LB's in-flight counts, what peers report in flight) and its peer
// LBs (the last report and the poll RTT). The I/O shells feed these records from probes, scrapes and
// polls; everything derived from them (freshness, SkyLB fullness, the views policies see) is computed
// here, once.
import { admittedConcurrencyAfterScrape, isReplicaFull, type CandidateView, type PeerView, type ScrapedLoad } from "@meridian/routing";
import type { PrefixIndex } from "@meridian/routing";
import type { LbConfig, PeerConfig, PeerReport, Probes, ReplicaConfig } from "@meridian/protocol";
import { FirstByteHistory } from "./deadline";
import { ForwardLedger } from "./forward-ledger";
import { RttEstimate } from "./rtt";

/** A scrape or a peer report older than this many intervals is stale: acted on as if absent. */
export const STALE_AFTER_INTERVALS = 3;

export interface ScrapeRecord {
  ok: boolean;
  /** Time of the last successful scrape on the caller's clock; null before the first. */
  at: number | null;
  error: string | null;
  load: ScrapedLoad | null;
}

/** Σ predicted and Σ actual cached tokens over requests whose replica reported cached tokens. */
export class PredictionSums {
  predicted = 0;
  actual = 0;
  /** Σ min(predicted, actual) and Σ max(predicted, actual). */
  overlap = 0;
  union = 0;
  samples = 0;

  add(predicted: number, actual: number): void {
    this.predicted += predicted;
    this.actual += actual;
    this.overlap += Math.min(predicted, actual);
    this.union += Math.max(predicted, actual);
    this.samples++;
  }

  /** Σ min(predicted, actual) / Σ max(predicted, actual), as the simulator and the replicas' rolling
   * window measure it: 1 when exact; null before any sample with a cached token on either side. */
  accuracy(): number | null {
    return this.union > 0 ? this.overlap / this.union : null;
  }
}

export type HealthChange = "recovered" | "unhealthy" | null;

const GAUGES = ["running", "waiting", "usedTokens"] as const;

/** Why a scraped load cannot be used, or null when it can. A replica's exporter may write +Inf, NaN
 * or a negative value (Prometheus text allows them); stored, such a gauge would make every later
 * routing decision throw (routing validates its inputs), so requests would fail although other
 * replicas could serve them. The scrape counts as failed instead: the last good load ages out. */
function invalidGauge(load: ScrapedLoad): string | null {
  for (const gauge of GAUGES) {
    const value = load[gauge];
    if (!Number.isFinite(value) || value < 0) return `invalid gauge ${gauge}: ${value} (must be a finite number >= 0)`;
  }
  return null;
}

export class ReplicaRecord {
  readonly rtt = new RttEstimate();
  /** What its answers taught about its time to first byte (the first-byte deadline). */
  readonly firstByte = new FirstByteHistory();
  healthy = false;
  /** Set once the first probe has answered either way. */
  probed = false;
  consecutiveProbeFailures = 0;
  scrape: ScrapeRecord = { ok: false, at: null, error: null, load: null };
  /** Running count the engine admitted while it also had waiting requests (SkyLB full rule). */
  admittedConcurrency: number | null = null;
  inFlight = 0;
  /** Prompt tokens this LB has in flight on the replica. */
  queuedTokens = 0;
  /** Prompt tokens peer LBs report in flight on the replica. */
  peerQueuedTokens = 0;
  /** Uncached prompt tokens of this LB's requests on the replica that have not reached their first
   * response byte (routing's CandidateView.pendingPrefillTokens). */
  pendingPrefillTokens = 0;
  /** The same, as peer LBs report it. */
  peerPendingPrefillTokens = 0;
  /** The KV-cache capacity in tokens the engine reports (its metrics), null until known. */
  engineCapacityTokens: number | null = null;
  /** 2xx responses served. */
  requests = 0;
  /** Σ prompt tokens and Σ cached tokens of the answers whose usage reported both: the cache hit
   * rate (LbState) divides them. An engine that reports no cached tokens (vLLM without
   * --enable-prompt-tokens-details) adds nothing, so its hit rate stays unknown, not 0. */
  readonly cacheReports = { promptTokens: 0, cachedTokens: 0 };
  readonly prediction = new PredictionSums();
  /** The view handed to policies, refreshed in place (no allocation per decision). */
  private readonly view: CandidateView;

  /** A request of `inputTokens` prompt tokens, `pendingPrefillTokens` of them uncached, dispatched here. */
  book(inputTokens: number, pendingPrefillTokens: number): void {
    this.inFlight++;
    this.queuedTokens += inputTokens;
    this.pendingPrefillTokens += pendingPrefillTokens;
  }

  /** That request no longer occupies the replica (ended, failed, or retried elsewhere). */
  unbook(inputTokens: number, pendingPrefillTokens: number): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    this.queuedTokens = Math.max(0, this.queuedTokens - inputTokens);
    this.pendingPrefillTokens = Math.max(0, this.pendingPrefillTokens - pendingPrefillTokens);
  }

  constructor(public config: ReplicaConfig) {
    this.view = {
      id: config.id,
      region: config.region,
      rttMs: 0,
      inFlight: 0,
      queuedTokens: 0,
      pendingPrefillTokens: 0,
      scraped: null,
      full: false,
      healthy: false,
    };
  }

  /** KV-cache capacity in tokens: the operator's `cacheCapacityTokens` when set, else what the
   * engine reports; null when neither is known, or when the engine caches nothing (0). */
  kvCapacityTokens(): number | null {
    const capacity = this.config.cacheCapacityTokens ?? this.engineCapacityTokens;
    return capacity !== null && capacity > 0 ? capacity : null;
  }

  get id(): string {
    return this.config.id;
  }

  /** Healthy and enabled: may take new requests. */
  routable(): boolean {
    return this.healthy && this.config.state === "enabled";
  }

  /** Scraped load, or null before the first scrape or once the last good one is stale. */
  freshLoad(now: number, probes: Probes): ScrapedLoad | null {
    const { at, load } = this.scrape;
    if (at === null || load === null) return null;
    return now - at > STALE_AFTER_INTERVALS * probes.scrapeIntervalMs ? null : load;
  }

  /** The concurrency cap for the full rule: the operator's maxConcurrency, else what the engine admitted. */
  concurrencyCap(): number | null {
    return this.config.maxConcurrency ?? this.admittedConcurrency;
  }

  full(now: number, probes: Probes): boolean {
    const load = this.freshLoad(now, probes);
    return isReplicaFull({ waiting: load ? load.waiting : null, inFlight: this.inFlight, admittedConcurrency: this.concurrencyCap() });
  }

  /** What a policy sees of this replica now: the one place a CandidateView is built. */
  candidateView(now: number, probes: Probes): CandidateView {
    const v = this.view;
    const load = this.freshLoad(now, probes);
    v.region = this.config.region;
    v.rttMs = this.rtt.ms ?? 0;
    v.inFlight = this.inFlight;
    v.queuedTokens = this.queuedTokens + this.peerQueuedTokens;
    v.pendingPrefillTokens = this.pendingPrefillTokens + this.peerPendingPrefillTokens;
    v.kvCapacityTokens = this.kvCapacityTokens() ?? undefined;
    v.scraped = load;
    v.full = isReplicaFull({ waiting: load ? load.waiting : null, inFlight: this.inFlight, admittedConcurrency: this.concurrencyCap() });
    v.healthy = this.healthy;
    return v;
  }

  probeSucceeded(sampleMs: number): HealthChange {
    this.rtt.observe(sampleMs);
    this.consecutiveProbeFailures = 0;
    const wasProbed = this.probed;
    this.probed = true;
    if (this.healthy) return null;
    this.healthy = true;
    return wasProbed ? "recovered" : null;
  }

  /** Before its first success a replica is not trusted; after it, only a run of `unhealthyAfter`
   * failures takes it out, so one lost probe does not flap routing. */
  probeFailed(probes: Probes): HealthChange {
    this.probed = true;
    this.consecutiveProbeFailures++;
    if (!this.healthy || this.consecutiveProbeFailures < probes.unhealthyAfter) return null;
    this.healthy = false;
    return "unhealthy";
  }

  /** Passive health: a refused or reset connection means the engine is gone; no new work until a
   * probe sees it answer again. True when this changed its health. */
  markUnreachable(probes: Probes): boolean {
    if (!this.healthy) return false;
    this.healthy = false;
    this.consecutiveProbeFailures = probes.unhealthyAfter;
    return true;
  }

  /** Records a scrape's load; false (recorded as a failed scrape) when a gauge is unusable. */
  scrapeSucceeded(load: ScrapedLoad, now: number): boolean {
    const invalid = invalidGauge(load);
    if (invalid !== null) {
      this.scrapeFailed(invalid);
      return false;
    }
    this.admittedConcurrency = admittedConcurrencyAfterScrape({
      previous: this.admittedConcurrency,
      running: load.running,
      waiting: load.waiting,
      inFlight: this.inFlight,
    });
    this.scrape = { ok: true, at: now, error: null, load };
    return true;
  }

  scrapeFailed(error: string): void {
    this.scrape = { ...this.scrape, ok: false, error };
  }
}

/** A peer report without its wire tag (the I/O shell adds and checks `schema`). */
export type PeerReportBody = Omit<PeerReport, "schema">;

export class PeerRecord {
  readonly rtt = new RttEstimate();
  /** What the peer's answers to this LB's forwards taught about their time to first byte: a
   * forward's first-byte deadline (deadline.ts). */
  readonly firstByte = new FirstByteHistory();
  report: PeerReportBody | null = null;
  reportAt: number | null = null;
  lastError: string | null = null;
  constructor(
    public config: PeerConfig,
    /** This LB's forwards that no report of the peer shows yet (forward-ledger.ts), shared by every
     * record of the LB, so that a record made again for the same URL keeps counting them. */
    private readonly forwards: ForwardLedger = new ForwardLedger(),
  ) {}

  get id(): string {
    return this.config.id;
  }

  /** The last report, if recent enough to act on (3 poll intervals). */
  freshReport(now: number, pollIntervalMs: number): PeerReportBody | null {
    if (this.report === null || this.reportAt === null) return null;
    return now - this.reportAt > STALE_AFTER_INTERVALS * pollIntervalMs ? null : this.report;
  }

  /** What availability sees of the peer for a request: its report (the replicas available for the
   * request's model, when the peer reports them by model) and the RTT this LB measured. None for a
   * keyless request when the peer's region requires client keys. `freeNow`: only the replicas that
   * this LB's forwards the report cannot show have not taken, of the request's model when the peer
   * reports by model (a request leaving a replica that may still answer goes only where it can start
   * at once; redispatch.ts). */
  peerView(now: number, pollIntervalMs: number, request: { model: string | null; clientKeyed: boolean }, freeNow = false): PeerView | null {
    const report = this.freshReport(now, pollIntervalMs);
    if (!report || (report.clientKeysRequired === true && !request.clientKeyed)) return null;
    const { model } = request;
    const byModel = report.availableByModel;
    const perModel = model !== null && byModel !== undefined;
    const reported = perModel ? (byModel[model] ?? 0) : report.availableReplicas;
    const taken = freeNow ? this.forwards.unshown(this.config.url, perModel ? model : null) : 0;
    const availableReplicas = Math.max(0, reported - taken);
    return { id: this.id, region: this.config.region, rttMs: this.rtt.ms ?? 0, availableReplicas, queueLength: report.queueLength };
  }

  /** A report came in at `now`, `rttSampleMs` after its poll left: it shows the forwards sent before then. */
  reported(report: PeerReportBody, rttSampleMs: number, now: number): void {
    this.rtt.observe(rttSampleMs);
    this.report = report;
    this.reportAt = now;
    this.lastError = null;
    // A body takes time to reach the peer and be routed there: a poll that left within an RTT of the
    // forward may still find its replica free.
    this.forwards.shown(this.config.url, now - rttSampleMs - (this.rtt.ms ?? rttSampleMs));
  }
}

/** Targets the shell must start or stop I/O for after a config change. */
export interface TargetChanges {
  addedReplicas: ReplicaRecord[];
  removedReplicas: ReplicaRecord[];
  addedPeers: PeerRecord[];
  removedPeers: PeerRecord[];
}

/** Brings the records in line with a config. A target whose id disappeared or whose URL changed is a
 * new target: it starts from nothing, and the index forgets its routes. */
export function syncTargets(
  config: LbConfig,
  replicas: Map<string, ReplicaRecord>,
  peers: Map<string, PeerRecord>,
  index: PrefixIndex,
  peerIndex: PrefixIndex,
  forwards: ForwardLedger,
): TargetChanges {
  const changes: TargetChanges = { addedReplicas: [], removedReplicas: [], addedPeers: [], removedPeers: [] };
  syncRecords(config.replicas, replicas, (c) => new ReplicaRecord(c), index, changes.addedReplicas, changes.removedReplicas);
  syncRecords(config.peers, peers, (c) => new PeerRecord(c, forwards), peerIndex, changes.addedPeers, changes.removedPeers);
  return changes;
}

/** Whether `current`, the record now configured under a target's id, stands for the endpoint that
 * `booked` did: the same record, or one made since for the same URL (a replica or peer removed and
 * put back, as a console's failover flap or a config rollback does). A changed URL is another engine
 * or LB. */
export function sameEndpoint(booked: { readonly config: { url: string } }, current: { readonly config: { url: string } } | undefined): boolean {
  return current !== undefined && (current === booked || current.config.url === booked.config.url);
}

/** One kind of target: drop records whose id went or whose URL changed (and their index routes),
 * update the config of the others, and create records for new ids. */
function syncRecords<C extends { id: string; url: string }, R extends { config: C; readonly id: string }>(
  wanted: readonly C[],
  records: Map<string, R>,
  create: (config: C) => R,
  index: PrefixIndex,
  added: R[],
  removed: R[],
): void {
  const byId = new Map(wanted.map((c) => [c.id, c]));
  for (const [id, record] of records) {
    const next = byId.get(id);
    if (next && next.url === record.config.url) continue;
    records.delete(id);
    index.removeReplica(id);
    removed.push(record);
  }
  for (const config of wanted) {
    const existing = records.get(config.id);
    if (existing) {
      existing.config = config;
      continue;
    }
    const record = create(config);
    records.set(record.id, record);
    added.push(record);
  }
}
