// Regions: list, create, rename, delete, and the observed RTT matrix.
import "server-only";
import { eq } from "drizzle-orm";
import { entrypoints, loadBalancers, observedRtts, regions, replicas, type RegionRow } from "@meridian/db";
import { type Actor, recordAudit } from "../audit-trail";
import { conflict, notFound, precondition } from "../errors";
import type { DbLike, ServiceRuntime } from "./context";
import { defaultHomeLb } from "./home-lb";
import { newId } from "./ids";

export interface RegionSummary {
  id: string;
  name: string;
  displayName: string | null;
  lbCount: number;
  replicaCount: number;
  entrypointLbId: string | null;
  /** The home LB a replica created in this region gets when none is chosen (home-lb.ts). */
  defaultHomeLbId: string | null;
}

export function listRegions(rt: ServiceRuntime): RegionSummary[] {
  const lbs = rt.db.select({ regionId: loadBalancers.regionId }).from(loadBalancers).all();
  const reps = rt.db.select({ regionId: replicas.regionId }).from(replicas).all();
  const entries = new Map(
    rt.db
      .select()
      .from(entrypoints)
      .all()
      .map((e) => [e.regionId, e.lbId]),
  );
  return rt.db
    .select()
    .from(regions)
    .orderBy(regions.name)
    .all()
    .map((r) => ({
      id: r.id,
      name: r.name,
      displayName: r.displayName,
      lbCount: lbs.filter((l) => l.regionId === r.id).length,
      replicaCount: reps.filter((x) => x.regionId === r.id).length,
      entrypointLbId: entries.get(r.id) ?? null,
      defaultHomeLbId: defaultHomeLb(rt.db, r.id)?.id ?? null,
    }));
}

/** A region by its name (what operators type) or its id. */
function findRegion(db: DbLike, nameOrId: string): RegionRow | undefined {
  return db.select().from(regions).where(eq(regions.name, nameOrId)).get() ?? db.select().from(regions).where(eq(regions.id, nameOrId)).get();
}

export function requireRegion(db: DbLike, nameOrId: string): RegionRow {
  const region = findRegion(db, nameOrId);
  if (!region) throw precondition(`unknown region "${nameOrId}"; create it on the Regions page first`);
  return region;
}

export function createRegion(rt: ServiceRuntime, actor: Actor, input: { name: string; displayName?: string | undefined }): { id: string } {
  return rt.db.transaction((tx) => {
    if (tx.select().from(regions).where(eq(regions.name, input.name)).get()) {
      throw conflict(`a region named "${input.name}" already exists`);
    }
    const id = newId(input.name, (candidate) => !!tx.select().from(regions).where(eq(regions.id, candidate)).get());
    const row = { id, name: input.name, displayName: input.displayName ?? null, createdAt: Date.now() };
    tx.insert(regions).values(row).run();
    recordAudit(tx, actor, "region.create", `region:${id}`, null, row);
    return { id };
  });
}

export function updateRegion(
  rt: ServiceRuntime,
  actor: Actor,
  input: { id: string; name?: string | undefined; displayName?: string | null | undefined },
): void {
  const renamed = rt.db.transaction((tx) => {
    const before = tx.select().from(regions).where(eq(regions.id, input.id)).get();
    if (!before) throw notFound("region", input.id);
    if (input.name !== undefined && input.name !== before.name) {
      if (tx.select().from(regions).where(eq(regions.name, input.name)).get()) {
        throw conflict(`a region named "${input.name}" already exists`);
      }
    }
    const after = {
      ...before,
      name: input.name ?? before.name,
      displayName: input.displayName === undefined ? before.displayName : input.displayName,
    };
    tx.update(regions).set({ name: after.name, displayName: after.displayName }).where(eq(regions.id, input.id)).run();
    if (after.name !== before.name) {
      // Observed RTTs are keyed by region name (as the LBs report it).
      tx.update(observedRtts).set({ fromRegion: after.name }).where(eq(observedRtts.fromRegion, before.name)).run();
      tx.update(observedRtts).set({ toRegion: after.name }).where(eq(observedRtts.toRegion, before.name)).run();
    }
    recordAudit(tx, actor, "region.update", `region:${input.id}`, before, after);
    return after.name !== before.name;
  });
  // LB configs carry region names.
  if (renamed) rt.publisher.publishAll();
}

export function deleteRegion(rt: ServiceRuntime, actor: Actor, input: { id: string }): void {
  rt.db.transaction((tx) => {
    const before = tx.select().from(regions).where(eq(regions.id, input.id)).get();
    if (!before) throw notFound("region", input.id);
    const lbCount = tx.select().from(loadBalancers).where(eq(loadBalancers.regionId, input.id)).all().length;
    const replicaCount = tx.select().from(replicas).where(eq(replicas.regionId, input.id)).all().length;
    if (lbCount > 0 || replicaCount > 0) {
      throw precondition(`region "${before.name}" still has ${lbCount} load balancer(s) and ${replicaCount} replica(s); delete or move them first`);
    }
    tx.delete(regions).where(eq(regions.id, input.id)).run();
    recordAudit(tx, actor, "region.delete", `region:${input.id}`, before, null);
  });
}

/** Observed RTT between every pair of regions (row = from, column = to), null when never measured. */
export function rttMatrix(rt: ServiceRuntime): { regions: string[]; rttMs: (number | null)[][] } {
  const names = rt.db
    .select()
    .from(regions)
    .orderBy(regions.name)
    .all()
    .map((r) => r.name);
  const observed = rt.db.select().from(observedRtts).all();
  const lookup = new Map(observed.map((o) => [`${o.fromRegion}\u0000${o.toRegion}`, o.rttMs]));
  return {
    regions: names,
    rttMs: names.map((from) =>
      names.map((to) => {
        const value = lookup.get(`${from}\u0000${to}`);
        return value === undefined ? null : Math.round(value * 10) / 10;
      }),
    ),
  };
}
