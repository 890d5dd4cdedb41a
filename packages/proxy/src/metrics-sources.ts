// What the LB's metrics read of its core at each scrape (metrics.ts, MetricsSources): per replica its
// load and state, the configured peers, the config in force, the hold queue, the prefix index and the
// cache truth. Read, never kept: a scrape sees the core as it is then.
import type { LbCore } from "@meridian/lb-core";
import { coreNow } from "./core-clock";
import type { MetricsSources } from "./metrics";

export function metricsSourcesOf(core: LbCore<unknown>): MetricsSources {
  return {
    replicaGauges: () =>
      [...core.replicas.values()].map((r) => ({
        id: r.id,
        inFlight: r.inFlight,
        queuedTokens: r.queuedTokens + r.peerQueuedTokens,
        rttMs: r.rtt.ms,
        healthy: r.healthy,
        state: r.config.state,
      })),
    peerIds: () => [...core.peers.keys()],
    config: () => {
      const { lbId, region, policy, crossRegion, version, weights } = core.config;
      return { lbId, region, policy, crossRegion, version, weights };
    },
    queueLength: () => core.queue.length,
    indexRoutes: () => core.index.stats().routes,
    predictionAccuracy: () => core.prediction.accuracy(),
    cacheStates: () => {
      const now = coreNow();
      return [...core.replicas.keys()].map((id) => ({ id, cache: core.truth.state(id, now) }));
    },
  };
}
