// A replica's home LB when the operator picks none ("default (region's LB)"). The default is written
// into the replica's row when it is created, so the home is explicit everywhere it is read: the
// replicas page, the LB's owned replicas, via-peer configs and failover (which moves only what an
// LB owns). A replica created in a region with no LB yet stays unhomed until an LB is created there.
import "server-only";
import { and, eq, inArray, isNull } from "drizzle-orm";
import type { LoadBalancerRow, Queryable } from "@meridian/db";
import { type Actor, recordAudit } from "../audit-trail";

/** The region's default home LB: the LB its clients are assigned to when that LB is in the region
 * (not a failover target elsewhere), else its first LB by name; null when the region has none. */
export async function defaultHomeLb({ db, tables }: Queryable, regionId: string): Promise<LoadBalancerRow | null> {
  const { entrypoints, loadBalancers } = tables;
  const inRegion = await db.select().from(loadBalancers).where(eq(loadBalancers.regionId, regionId)).orderBy(loadBalancers.name);
  const [entry] = await db.select().from(entrypoints).where(eq(entrypoints.regionId, regionId)).limit(1);
  return inRegion.find((lb) => lb.id === entry?.lbId) ?? inRegion[0] ?? null;
}

/** Where a replica homed on `home` is served as local: the failover target while `home` is failed
 * over (as failover.ts re-homes the replicas it owns), else nowhere else. */
export function rehomedTarget(home: Pick<LoadBalancerRow, "state" | "failedOverTo"> | null): string | null {
  return home?.state === "failed-over" ? home.failedOverTo : null;
}

/** Gives each replica without a home LB (in `regionId`, or anywhere) its region's default, audited
 * per replica. Returns the ids it homed. */
export async function assignDefaultHomes(q: Queryable, actor: Actor, regionId?: string): Promise<string[]> {
  const { replicas } = q.tables;
  const unhomed = await q.db
    .select()
    .from(replicas)
    .where(regionId === undefined ? isNull(replicas.homeLbId) : and(isNull(replicas.homeLbId), eq(replicas.regionId, regionId)));
  const homed: string[] = [];
  for (const replica of unhomed) {
    const home = await defaultHomeLb(q, replica.regionId);
    if (!home) continue;
    const after = { homeLbId: home.id, rehomedToLbId: rehomedTarget(home) };
    await q.db
      .update(replicas)
      .set(after)
      .where(inArray(replicas.id, [replica.id]));
    await recordAudit(q, actor, "replica.home-default", `replica:${replica.id}`, { homeLbId: null, rehomedToLbId: replica.rehomedToLbId }, after);
    homed.push(replica.id);
  }
  return homed;
}
