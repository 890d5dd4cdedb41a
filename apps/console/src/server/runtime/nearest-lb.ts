// Which LB can take a region's clients, and which healthy LB is nearest to a region. One rule for
// failover (the LB that takes a failed LB's replicas and entrypoint) and for the entrypoint map (the
// LB a region's clients resolve to while its own LB is failed): both must agree on what "healthy"
// and "nearest" mean. Another LB is a candidate only once it has proved it holds its token at its
// URL (lb-proof-rows.ts): a listener that answers /health is not handed a region's clients.
import "server-only";
import { and, eq, or } from "drizzle-orm";
import type { LoadBalancerRow, Queryable } from "@meridian/db";
import { regionNamesById } from "../region-names";
import type { LbHealthBook } from "./lb-health";
import { provenLbIds } from "./lb-proof-rows";

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
async function regionRttMs({ db, tables }: Queryable, fromRegion: string, toRegion: string): Promise<number | null> {
  if (fromRegion === toRegion) return 0;
  const { observedRtts } = tables;
  const rows = await db
    .select()
    .from(observedRtts)
    .where(
      or(
        and(eq(observedRtts.fromRegion, fromRegion), eq(observedRtts.toRegion, toRegion)),
        and(eq(observedRtts.fromRegion, toRegion), eq(observedRtts.toRegion, fromRegion)),
      ),
    );
  if (rows.length === 0) return null;
  return Math.min(...rows.map((r) => r.rttMs));
}

export interface NearestLb {
  lb: LoadBalancerRow;
  /** Observed RTT from the region to the LB's region; null when never observed (such LBs come last). */
  rttMs: number | null;
}

/** The LB nearest to `regionId` that takes clients and has proved its token, other than
 * `excludeLbId`; ties (and unknown RTTs) by name. null when there is none. */
export async function nearestHealthyLb(q: Queryable, book: Book, regionId: string, excludeLbId: string | null): Promise<NearestLb | null> {
  const regionName = await regionNamesById(q);
  const from = regionName.get(regionId) ?? regionId;
  const proven = await provenLbIds(q);
  const eligible = (await q.db.select().from(q.tables.loadBalancers)).filter(
    (other) => other.id !== excludeLbId && lbTakesClients(other, book) && proven.has(other.id),
  );
  const candidates: NearestLb[] = [];
  for (const other of eligible) candidates.push({ lb: other, rttMs: await regionRttMs(q, from, regionName.get(other.regionId) ?? other.regionId) });
  candidates.sort((a, b) => (a.rttMs ?? Number.POSITIVE_INFINITY) - (b.rttMs ?? Number.POSITIVE_INFINITY) || a.lb.name.localeCompare(b.lb.name));
  return candidates[0] ?? null;
}
