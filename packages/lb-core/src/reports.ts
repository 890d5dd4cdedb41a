// What an LB tells others about itself: the PeerReport its peers poll (per-replica in-flight tokens,
// availability, queue, prefix snapshot), how it folds peers' reports back into its replica records,
// and the LbState snapshot the console reads. Wire tags are the shells' business: these build bodies.
import type { CacheTruth, PrefixIndex } from "@meridian/routing";
import type { LbConfig, LbState } from "@meridian/protocol";
import type { HoldQueue } from "./hold-queue";
import { STALE_AFTER_INTERVALS, type PeerRecord, type PeerReportBody, type ReplicaRecord } from "./targets";

export type LbStateBody = Omit<LbState, "schema">;

export interface ReportSources {
  config: LbConfig;
  replicas: ReadonlyMap<string, ReplicaRecord>;
  peers: ReadonlyMap<string, PeerRecord>;
  peerPollIntervalMs: number;
  index: PrefixIndex;
  truth: CacheTruth;
  queue: HoldQueue<unknown>;
}

/** The report peers poll. `snapshotKeys` > 0 adds up to that many most recently used block keys. */
export function buildPeerReport(src: ReportSources, now: number, snapshotKeys: number): PeerReportBody {
  const { config } = src;
  const replicas = [];
  let availableReplicas = 0;
  const availableByModel: Record<string, number> = {};
  for (const r of src.replicas.values()) {
    const full = r.full(now, config.probes);
    replicas.push({ id: r.id, inFlight: r.inFlight, inFlightTokens: r.queuedTokens, pendingPrefillTokens: r.pendingPrefillTokens, full });
    if (r.config.region !== config.region) continue;
    const available = r.routable() && !full ? 1 : 0;
    availableReplicas += available;
    // Per model, so a peer forwards only requests this LB has a replica for (a 404 otherwise).
    availableByModel[r.config.model] = (availableByModel[r.config.model] ?? 0) + available;
  }
  const report: PeerReportBody = {
    lbId: config.lbId,
    region: config.region,
    time: now,
    configVersion: config.version,
    replicas,
    queueLength: src.queue.length,
    availableReplicas,
    availableByModel,
    clientKeysRequired: config.clientAuth.required,
  };
  if (snapshotKeys > 0) {
    const keys = src.index.snapshot(snapshotKeys, now);
    report.snapshot = { keys, truncated: keys.length >= snapshotKeys };
  }
  return report;
}

/** Sums what fresh peer reports say is in flight (and still before its first byte) on each replica,
 * so LBs sharing replicas do not herd. Returns the time until which the sums hold: the first moment
 * a report it counted goes stale (Infinity when it counted none). A report that went stale, or a peer
 * that died or left the config, must stop counting without waiting for another peer's report, so the
 * core sums again once that time has passed, and whenever a report arrives or the config changes. */
export function refreshPeerQueuedTokens(src: Pick<ReportSources, "replicas" | "peers" | "peerPollIntervalMs">, now: number): number {
  for (const replica of src.replicas.values()) {
    replica.peerQueuedTokens = 0;
    replica.peerPendingPrefillTokens = 0;
  }
  let validUntil = Number.POSITIVE_INFINITY;
  for (const peer of src.peers.values()) {
    const report = peer.freshReport(now, src.peerPollIntervalMs);
    if (!report || peer.reportAt === null) continue;
    validUntil = Math.min(validUntil, peer.reportAt + STALE_AFTER_INTERVALS * src.peerPollIntervalMs);
    for (const load of report.replicas) {
      const replica = src.replicas.get(load.id);
      if (!replica) continue;
      replica.peerQueuedTokens += load.inFlightTokens;
      replica.peerPendingPrefillTokens += load.pendingPrefillTokens;
    }
  }
  return validUntil;
}

export interface StateExtras {
  startedAt: number;
  totals: { requests: number; errors: number; forwarded: number };
  telemetry: { lastSeq: number; bufferSize: number };
}

/** The LbState the console polls. */
export function buildLbState(src: ReportSources, now: number, extras: StateExtras): LbStateBody {
  const { config } = src;
  let totalRequests = 0;
  for (const r of src.replicas.values()) totalRequests += r.requests;
  const stats = src.index.stats();
  return {
    lbId: config.lbId,
    region: config.region,
    configVersion: config.version,
    policy: config.policy,
    weights: config.weights,
    ...(config.trial !== undefined ? { trial: config.trial } : {}),
    crossRegion: config.crossRegion,
    startedAt: extras.startedAt,
    replicas: [...src.replicas.values()].map((r) => {
      const load = r.scrape.load;
      const fresh = r.freshLoad(now, config.probes);
      return {
        id: r.id,
        url: r.config.url,
        region: r.config.region,
        model: r.config.model,
        state: r.config.state,
        healthy: r.healthy,
        rttMs: r.rtt.ms,
        inFlight: r.inFlight,
        queuedTokens: r.queuedTokens,
        peerQueuedTokens: r.peerQueuedTokens,
        full: r.full(now, config.probes),
        share: totalRequests === 0 ? 0 : r.requests / totalRequests,
        requests: r.requests,
        cacheHitRate: r.cacheReports.promptTokens > 0 ? Math.min(1, r.cacheReports.cachedTokens / r.cacheReports.promptTokens) : null,
        predictionAccuracy: r.prediction.accuracy(),
        scrape: {
          ok: r.scrape.ok && fresh !== null,
          ageMs: r.scrape.at === null ? null : now - r.scrape.at,
          error: r.scrape.error ?? (r.scrape.at !== null && fresh === null ? "stale" : null),
          running: load?.running ?? 0,
          waiting: load?.waiting ?? 0,
          usedTokens: load?.usedTokens ?? 0,
        },
        cache: src.truth.state(r.id, now),
      };
    }),
    queue: { length: src.queue.length, maxLength: config.limits.queueMaxLength, oldestWaitMs: src.queue.oldestWaitMs(now) },
    index: { routes: stats.routes, blocks: stats.blocks, evictions: stats.evictions, hits: stats.hits, lookups: stats.lookups },
    totals: { ...extras.totals, queued: src.queue.totalHeld },
    telemetry: extras.telemetry,
    peers: [...src.peers.values()].map((p) => {
      const report = p.freshReport(now, src.peerPollIntervalMs);
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

/** One model the LB serves (GET /v1/models): its replicas, how many pass their probes whatever their
 * state, and how many take new requests. */
export interface ModelCount {
  id: string;
  replicas: number;
  healthy: number;
  serving: number;
}

export function modelCounts(replicas: Iterable<ReplicaRecord>): ModelCount[] {
  const byModel = new Map<string, ModelCount>();
  for (const r of replicas) {
    const entry = byModel.get(r.config.model) ?? { id: r.config.model, replicas: 0, healthy: 0, serving: 0 };
    entry.replicas++;
    if (r.healthy) entry.healthy++;
    if (r.routable()) entry.serving++;
    byModel.set(r.config.model, entry);
  }
  return [...byModel.values()];
}
