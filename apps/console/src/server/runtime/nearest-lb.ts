// Which LB can take a region's clients, and which healthy LB is nearest to a region. One rule for
// failover (the LB that takes a failed LB's replicas and entrypoint) and for the entrypoint map (the
// LB a region's clients resolve to while its own LB is failed): both must agree on what "healthy"
// and "nearest" mean.
import "server-only";
import { and, eq, or } from "drizzle-orm";
import { loadBalancers, observedRtts, type Db, type LoadBalancerRow } from "@meridian/db";
import { regionNamesById } from "../region-names";
import type { LbHealthBook } from "./lb-health";

type Book = Pick<LbHealthBook, "isHealthy" | "probedAll">;

/**
 * An LB takes clients when it is neither failed nor failed over and its last probe answered. One not
 * probed yet counts only while the console has not finished its first probe round (its stored state
 * is then all anyone knows); after that it is an LB added since, unknown until its first probe, and
 * a region is not handed to an LB that may be dead.
 */
export function lbTakesClients(lb: Pick<LoadBalancerRow, "id" | "state">, book: Book): boolean {
  if (lb.state !== "healthy") return false;
  const healthy = book.isHealthy(lb.id);
  return healthy === true || (healthy === null && !book.probedAll);
}

/** RTT in ms between two regions (by name) as observed in either direction, 0 within a region,
 * null when never observed. */
function regionRttMs(db: Pick<Db, "select">, fromRegion: string, toRegion: string): number | null {
  if (fromRegion === toRegion) return 0;
  const rows = db
    .select()
    .from(observedRtts)
    .where(
      or(
        and(eq(observedRtts.fromRegion, fromRegion), eq(observedRtts.toRegion, toRegion)),
        and(eq(observedRtts.fromRegion, toRegion), eq(observedRtts.toRegion, fromRegion)),
      ),
    )
    .all();
  if (rows.length === 0) return null;
  return Math.min(...rows.map((r) => r.rttMs));
}

export interface NearestLb {
  lb: LoadBalancerRow;
  /** Observed RTT from the region to the LB's region; null when never observed (such LBs come last). */
  rttMs: number | null;
}

/** The LB nearest to `regionId` that takes clients, other than `excludeLbId`; ties (and unknown
 * RTTs) by name. null when no LB is healthy. */
export function nearestHealthyLb(db: Pick<Db, "select">, book: Book, regionId: string, excludeLbId: string | null): NearestLb | null {
  const regionName = regionNamesById(db);
  const from = regionName.get(regionId) ?? regionId;
  const candidates = db
    .select()
    .from(loadBalancers)
    .all()
    .filter((other) => other.id !== excludeLbId && lbTakesClients(other, book))
    .map((other) => ({ lb: other, rttMs: regionRttMs(db, from, regionName.get(other.regionId) ?? other.regionId) }))
    .sort((a, b) => (a.rttMs ?? Number.POSITIVE_INFINITY) - (b.rttMs ?? Number.POSITIVE_INFINITY) || a.lb.name.localeCompare(b.lb.name));
  return candidates[0] ?? null;
}
