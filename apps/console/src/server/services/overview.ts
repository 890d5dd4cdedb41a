// The overview page's one query: topology by region with live state, and the rolling series.
import "server-only";
import { regions } from "@meridian/db";
import { entrypointMap, listLbs } from "./lbs";
import { listReplicas } from "./replicas";
import type { ServiceRuntime } from "./context";

export function overviewSummary(rt: ServiceRuntime) {
  const lbs = listLbs(rt);
  const reps = listReplicas(rt);
  const stats = rt.telemetry.stats;
  const now = Date.now();
  return {
    regions: rt.db
      .select()
      .from(regions)
      .orderBy(regions.name)
      .all()
      .map((region) => ({
        id: region.id,
        name: region.name,
        displayName: region.displayName,
        lbs: lbs
          .filter((lb) => lb.regionId === region.id)
          .map((lb) => ({
            id: lb.id,
            name: lb.name,
            state: lb.state,
            healthy: lb.healthy,
            probed: lb.probed,
            consecutiveFailures: lb.consecutiveFailures,
            lastError: lb.lastError,
            policy: lb.policy,
            crossRegion: lb.crossRegion,
            weights: lb.weights,
            configVersion: lb.configVersion,
            ackedVersion: lb.ackedVersion,
            url: lb.url,
            failedOverTo: lb.failedOverTo,
          })),
        replicas: reps
          .filter((r) => r.region === region.name)
          .map((r) => ({
            id: r.id,
            name: r.name,
            state: r.state,
            healthy: r.healthy,
            homeLbId: r.homeLbId,
            share: r.share,
            inFlight: r.inFlight,
            cacheHitRate: r.cacheHitRate,
          })),
      })),
    rps: stats.rps(now),
    errorRate: stats.errorRate(now),
    cacheHitRate: stats.cacheHitRate(now),
    ttftSeries: stats.ttftSeries(now),
    requestSeries: stats.requestSeries(now),
    telemetry: rt.telemetry.status(),
    entrypoints: Object.values(entrypointMap(rt)),
  };
}
