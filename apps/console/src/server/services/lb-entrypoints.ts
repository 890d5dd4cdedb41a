// A region's entrypoint when an LB arrives in the region (created, or moved in) or leaves it
// (deleted, or moved away). Failover and failback move entrypoints too (runtime/failover.ts); these
// rules keep to what they leave: a stand-in keeps a region's entrypoint only while an LB of that
// region is failed over and will reclaim it at failback.
import "server-only";
import { and, eq, ne } from "drizzle-orm";
import type { LoadBalancerRow, Queryable } from "@meridian/db";
import { type Actor, recordAudit } from "../audit-trail";
import { forUpdate } from "../runtime/row-lock";

/** Entrypoints an LB gave up (deleted with it, or left behind by a move) go to another LB of the
 * same region when there is one: the first by name that is not failed over, as a replica's default
 * home (home-lb.ts), else the first by name. `keepUnlessReplaced` (a stand-in's entrypoint): it goes
 * only to an LB of the region that is not failed over, and stays where it is otherwise. */
export async function handOverEntrypoints(
  tx: Queryable,
  given: Array<{ regionId: string; lbId: string }>,
  options: { keepUnlessReplaced?: boolean } = {},
): Promise<void> {
  const { entrypoints, loadBalancers } = tx.tables;
  for (const entry of given) {
    // Locked (PostgreSQL), as the LB that is given the entrypoint must stay what it was read as: a
    // delete of it running meanwhile would cascade the entrypoint away (the region left with none),
    // and a failover of it would leave the region pointing at a failed-over LB (review r39/6).
    const others = await forUpdate(
      tx,
      tx.db
        .select()
        .from(loadBalancers)
        .where(and(eq(loadBalancers.regionId, entry.regionId), ne(loadBalancers.id, entry.lbId)))
        .orderBy(loadBalancers.name),
    );
    const replacement = others.find((lb) => lb.state !== "failed-over") ?? (options.keepUnlessReplaced ? undefined : others[0]);
    if (!replacement && options.keepUnlessReplaced) continue;
    await tx.db.delete(entrypoints).where(and(eq(entrypoints.regionId, entry.regionId), eq(entrypoints.lbId, entry.lbId)));
    if (replacement) await tx.db.insert(entrypoints).values({ regionId: entry.regionId, lbId: replacement.id, updatedAt: Date.now() });
  }
}

/** The region's entrypoint that `lb`'s failover handed to a stand-in (in another region, as a rule).
 * An LB that leaves its region failed over never fails back, so nothing would bring the region's
 * clients home: it goes to an LB of the region when there is one (handOverEntrypoints), and stays
 * with the stand-in when there is none, until an LB arrives in the region (claimEntrypoint). */
export async function entrypointHeldAway(tx: Queryable, lb: LoadBalancerRow): Promise<Array<{ regionId: string; lbId: string }>> {
  if (lb.state !== "failed-over" || lb.failedOverEntrypoint === false) return [];
  const { entrypoints } = tx.tables;
  const [entry] = await tx.db.select().from(entrypoints).where(eq(entrypoints.regionId, lb.regionId)).limit(1);
  return entry && entry.lbId !== lb.id ? [entry] : [];
}

/**
 * An LB arriving in `regionId` becomes its entrypoint when the region has none, or when another
 * region's LB holds it for no LB of this region: the stand-in of an LB that was deleted or moved
 * away while failed over (entrypointHeldAway), which no failback will undo. Otherwise the region's
 * own entrypoint stays, and so does a stand-in's while an LB of the region is failed over and will
 * reclaim it (failover.ts). A move from a stand-in is audited on the region.
 *
 * An arriving LB that is itself failed over (moved while failed over) leaves the stand-in in place,
 * so the region's clients stay with a healthy LB. Returns true when its failback is to reclaim the
 * region then (the caller records that as the LB's failedOverEntrypoint).
 */
export async function claimEntrypoint(tx: Queryable, actor: Actor, regionId: string, arriving: Pick<LoadBalancerRow, "id" | "state">): Promise<boolean> {
  const { entrypoints, loadBalancers } = tx.tables;
  const now = Date.now();
  const [entry] = await tx.db.select().from(entrypoints).where(eq(entrypoints.regionId, regionId)).limit(1);
  if (!entry) {
    await tx.db.insert(entrypoints).values({ regionId, lbId: arriving.id, updatedAt: now }).onConflictDoNothing({ target: entrypoints.regionId });
    return false;
  }
  if (entry.lbId === arriving.id) return false;
  const inRegion = await tx.db.select().from(loadBalancers).where(eq(loadBalancers.regionId, regionId));
  if (inRegion.some((lb) => lb.id === entry.lbId)) return false;
  const reclaimedAtFailback = inRegion.some((lb) => lb.id !== arriving.id && lb.state === "failed-over" && lb.failedOverEntrypoint !== false);
  if (reclaimedAtFailback) return false;
  if (arriving.state === "failed-over") return true;
  await tx.db
    .update(entrypoints)
    .set({ lbId: arriving.id, updatedAt: now })
    .where(and(eq(entrypoints.regionId, regionId), eq(entrypoints.lbId, entry.lbId)));
  await recordAudit(tx, actor, "region.entrypoint-reclaim", `region:${regionId}`, { entrypoint: entry.lbId }, { entrypoint: arriving.id }, now);
  return false;
}
