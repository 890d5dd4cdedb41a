// Regions: list, create, rename, delete, and the observed RTT matrix.
import "server-only";
import { eq, or } from "drizzle-orm";
import type { Queryable, RegionRow } from "@meridian/db";
import { type Actor, recordAudit } from "../audit-trail";
import { conflict, notFound, precondition } from "../errors";
import { afterCommit } from "./after-commit";
import type { ServiceRuntime } from "./context";
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

export async function listRegions(rt: ServiceRuntime): Promise<RegionSummary[]> {
  const { db, tables } = rt.store;
  const { entrypoints, loadBalancers, regions, replicas } = tables;
  const lbs = await db.select({ regionId: loadBalancers.regionId }).from(loadBalancers);
  const reps = await db.select({ regionId: replicas.regionId }).from(replicas);
  const entries = new Map((await db.select().from(entrypoints)).map((e) => [e.regionId, e.lbId]));
  const rows = await db.select().from(regions).orderBy(regions.name);
  const summaries: RegionSummary[] = [];
  for (const r of rows) {
    summaries.push({
      id: r.id,
      name: r.name,
      displayName: r.displayName,
      lbCount: lbs.filter((l) => l.regionId === r.id).length,
      replicaCount: reps.filter((x) => x.regionId === r.id).length,
      entrypointLbId: entries.get(r.id) ?? null,
      defaultHomeLbId: (await defaultHomeLb(rt.store, r.id))?.id ?? null,
    });
  }
  return summaries;
}

/** A region by its name (what operators type) or its id. */
async function findRegion({ db, tables }: Queryable, nameOrId: string): Promise<RegionRow | undefined> {
  const { regions } = tables;
  const [byName] = await db.select().from(regions).where(eq(regions.name, nameOrId)).limit(1);
  if (byName) return byName;
  const [byId] = await db.select().from(regions).where(eq(regions.id, nameOrId)).limit(1);
  return byId;
}

export async function requireRegion(q: Queryable, nameOrId: string): Promise<RegionRow> {
  const region = await findRegion(q, nameOrId);
  if (!region) throw precondition(`unknown region "${nameOrId}"; create it on the Regions page first`);
  return region;
}

/** A blank display name is none: stored as null, which every page shows as the dash ("" showed a blank). */
function blankToNull(displayName: string | null | undefined): string | null {
  const trimmed = displayName?.trim();
  return trimmed ? trimmed : null;
}

export async function createRegion(rt: ServiceRuntime, actor: Actor, input: { name: string; displayName?: string | undefined }): Promise<{ id: string }> {
  return await rt.store.transaction(async (tx) => {
    const { regions } = tx.tables;
    if ((await tx.db.select({ id: regions.id }).from(regions).where(eq(regions.name, input.name)).limit(1)).length > 0) {
      throw conflict(`a region named "${input.name}" already exists`);
    }
    const id = await newId(
      input.name,
      async (candidate) => (await tx.db.select({ id: regions.id }).from(regions).where(eq(regions.id, candidate)).limit(1)).length > 0,
    );
    const row = { id, name: input.name, displayName: blankToNull(input.displayName), createdAt: Date.now() };
    await tx.db.insert(regions).values(row);
    await recordAudit(tx, actor, "region.create", `region:${id}`, null, row);
    return { id };
  });
}

export async function updateRegion(
  rt: ServiceRuntime,
  actor: Actor,
  input: { id: string; name?: string | undefined; displayName?: string | null | undefined },
): Promise<void> {
  const renamed = await rt.store.transaction(async (tx) => {
    const { observedRtts, regions } = tx.tables;
    const [before] = await tx.db.select().from(regions).where(eq(regions.id, input.id)).limit(1);
    if (!before) throw notFound("region", input.id);
    if (input.name !== undefined && input.name !== before.name) {
      if ((await tx.db.select({ id: regions.id }).from(regions).where(eq(regions.name, input.name)).limit(1)).length > 0) {
        throw conflict(`a region named "${input.name}" already exists`);
      }
    }
    const after = {
      ...before,
      name: input.name ?? before.name,
      displayName: input.displayName === undefined ? before.displayName : blankToNull(input.displayName),
    };
    await tx.db.update(regions).set({ name: after.name, displayName: after.displayName }).where(eq(regions.id, input.id));
    if (after.name !== before.name) {
      // Observed RTTs are keyed by region name (as the LBs report it). Rows already under the new
      // name (left by a region deleted before this change, or reported by an LB under a name no region
      // had) give way to the renamed region's own.
      await tx.db.delete(observedRtts).where(or(eq(observedRtts.fromRegion, after.name), eq(observedRtts.toRegion, after.name)));
      await tx.db.update(observedRtts).set({ fromRegion: after.name }).where(eq(observedRtts.fromRegion, before.name));
      await tx.db.update(observedRtts).set({ toRegion: after.name }).where(eq(observedRtts.toRegion, before.name));
    }
    await recordAudit(tx, actor, "region.update", `region:${input.id}`, before, after);
    return after.name !== before.name;
  });
  // LB configs carry region names.
  if (renamed) await afterCommit(rt, "region.update", { publish: () => rt.publisher.publishAll() });
}

export async function deleteRegion(rt: ServiceRuntime, actor: Actor, input: { id: string }): Promise<void> {
  await rt.store.transaction(async (tx) => {
    const { loadBalancers, regions, replicas } = tx.tables;
    const [before] = await tx.db.select().from(regions).where(eq(regions.id, input.id)).limit(1);
    if (!before) throw notFound("region", input.id);
    const lbCount = (await tx.db.select({ id: loadBalancers.id }).from(loadBalancers).where(eq(loadBalancers.regionId, input.id))).length;
    const replicaCount = (await tx.db.select({ id: replicas.id }).from(replicas).where(eq(replicas.regionId, input.id))).length;
    if (lbCount > 0 || replicaCount > 0) {
      throw precondition(`region "${before.name}" still has ${lbCount} load balancer(s) and ${replicaCount} replica(s); delete or move them first`);
    }
    // Its client keys go with it (a foreign-key cascade): the audit names them, so that a key that
    // stops working is traced to this delete rather than to no revocation at all.
    const { clientKeys } = tx.tables;
    const keys = await tx.db
      .select({ id: clientKeys.id, name: clientKeys.name, revokedAt: clientKeys.revokedAt })
      .from(clientKeys)
      .where(eq(clientKeys.regionId, input.id));
    await tx.db.delete(regions).where(eq(regions.id, input.id));
    // Its RTTs, keyed by its name, would otherwise pass to a region created or renamed to that name.
    const { observedRtts } = tx.tables;
    await tx.db.delete(observedRtts).where(or(eq(observedRtts.fromRegion, before.name), eq(observedRtts.toRegion, before.name)));
    await recordAudit(tx, actor, "region.delete", `region:${input.id}`, { ...before, clientKeys: keys }, null);
  });
}

/** Observed RTT between every pair of regions (row = from, column = to), null when never measured. */
export async function rttMatrix(rt: ServiceRuntime): Promise<{ regions: string[]; rttMs: (number | null)[][] }> {
  const { db, tables } = rt.store;
  const names = (await db.select({ name: tables.regions.name }).from(tables.regions).orderBy(tables.regions.name)).map((r) => r.name);
  const observed = await db.select().from(tables.observedRtts);
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
