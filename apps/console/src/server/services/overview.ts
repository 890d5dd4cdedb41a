// The overview page's one query: topology by region with live state, and the rolling series.
import "server-only";
import { entrypointMap, listLbs } from "./lbs";
import { listReplicas } from "./replicas";
import type { ServiceRuntime } from "./context";

export async function overviewSummary(rt: ServiceRuntime) {
  const lbs = await listLbs(rt);
  const reps = await listReplicas(rt);
  const { db, tables } = rt.store;
  const regionRows = await db.select().from(tables.regions).orderBy(tables.regions.name);
  const stats = rt.telemetry.stats;
  const now = Date.now();
  return {
    regions: regionRows.map((region) => ({
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
    /** What the TTFT stats show: the newest complete bucket, not the one still filling. */
    ttftLatest: stats.latestTtft(now),
    requestSeries: stats.requestSeries(now),
    /** Per LB this console subscribes to: stream open, events received and dropped, lag, last error. */
    telemetry: await rt.telemetry.status(),
    entrypoints: Object.values(await entrypointMap(rt)),
  };
}
