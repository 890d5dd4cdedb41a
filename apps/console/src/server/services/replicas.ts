// Replicas: CRUD and state (enabled / disabled / draining). Every change is pushed to the LBs
// whose config it alters (the publisher skips LBs whose config did not change).
import "server-only";
import { and, eq, ne, type SQL } from "drizzle-orm";
import type { Queryable, ReplicaRow } from "@meridian/db";
import { regionNamesById } from "../region-names";
import { type Actor, recordAudit } from "../audit-trail";
import { conflict, invalid, notFound, precondition } from "../errors";
import { effectiveHome } from "../runtime/config-builder";
import { forUpdate } from "../runtime/row-lock";
import { indexStatus, type IndexStatus } from "../runtime/index-status";
import { replicaWarningsFrom, type ReplicaWarning } from "../runtime/replica-warnings";
import type { CachePoint, SharePoint } from "../runtime/rolling-stats";
import { afterCommit } from "./after-commit";
import type { ServiceRuntime } from "./context";
import { defaultHomeLb, rehomedTarget } from "./home-lb";
import { newId } from "./ids";
import { requireRegion } from "./regions";
import { type ReplicaCapacity, requireCapacity } from "./replicas-capacity";
import { requireHttpUrl, sameName } from "./validation";

export type ReplicaState = ReplicaRow["state"];
export type EngineKind = ReplicaRow["engine"];

export interface ReplicaView {
  id: string;
  name: string;
  url: string;
  region: string;
  engine: EngineKind;
  model: string;
  state: ReplicaState;
  /** The LB serving the replica as local (the failover target while re-homed). */
  homeLbId: string | null;
  homeLbName: string | null;
  /** The LB it belongs to when nothing is failed over. */
  configuredHomeLbId: string | null;
  rehomed: boolean;
  /** null while no answering LB reports the replica (console just started, its LB not probed yet or
   * down): unknown, which the pages show apart from an engine whose probes fail. */
  healthy: boolean | null;
  inFlight: number | null;
  queuedTokens: number | null;
  share: number;
  cacheHitRate: number | null;
  predictionAccuracy: number | null;
  /** The serving LB's index against the engine's cache: its rolling accuracy and a status. */
  index: IndexStatus;
  rttMs: number | null;
  /** Setup problems the operator should see (no RTT emulation, a model its LB's clients do not use). */
  warnings: ReplicaWarning[];
  /** Pushed to the LBs when set; null: the LBs learn it from the engine. */
  maxConcurrency: number | null;
  cacheCapacityTokens: number | null;
}

export async function listReplicas(rt: ServiceRuntime): Promise<ReplicaView[]> {
  const { db, tables } = rt.store;
  const { loadBalancers, replicas } = tables;
  const regionNames = await regionNamesById(rt.store);
  const lbNames = new Map((await db.select({ id: loadBalancers.id, name: loadBalancers.name }).from(loadBalancers)).map((l) => [l.id, l.name]));
  const windowStats = rt.telemetry.stats.replicaStats();
  // The LB health book is in memory: its lookups answer at once.
  const warnings = await replicaWarningsFrom(rt.store, (lbId) => rt.lbHealth.lb(lbId)?.state ?? null);
  const now = Date.now();
  const rows = await db.select().from(replicas).orderBy(replicas.name);
  const views: ReplicaView[] = [];
  for (const r of rows) {
    const serving = effectiveHome(r);
    const live = await rt.lbHealth.replica(r.id, serving);
    const stats = windowStats.get(r.id);
    views.push({
      id: r.id,
      name: r.name,
      url: r.url,
      region: regionNames.get(r.regionId) ?? r.regionId,
      engine: r.engine,
      model: r.model,
      state: r.state,
      homeLbId: serving,
      homeLbName: serving ? (lbNames.get(serving) ?? null) : null,
      configuredHomeLbId: r.homeLbId,
      rehomed: r.rehomedToLbId !== null,
      healthy: live ? live.healthy : null,
      inFlight: live?.inFlight ?? null,
      queuedTokens: live?.queuedTokens ?? null,
      share: stats?.share ?? 0,
      cacheHitRate: stats?.cacheHitRate ?? live?.cacheHitRate ?? null,
      predictionAccuracy: live?.cache.accuracy ?? stats?.predictionAccuracy ?? live?.predictionAccuracy ?? null,
      index: indexStatus(live?.cache ?? null, now),
      rttMs: live?.rttMs ?? null,
      warnings: warnings.get(r.id) ?? [],
      maxConcurrency: r.maxConcurrency,
      cacheCapacityTokens: r.cacheCapacityTokens,
    });
  }
  return views;
}

export function shareHistory(rt: ServiceRuntime): SharePoint[] {
  return rt.telemetry.stats.shareSeries();
}

/** Predicted vs reported cached tokens per replica over time, from the LBs' telemetry. */
export function cacheHistory(rt: ServiceRuntime): CachePoint[] {
  return rt.telemetry.stats.cacheSeries();
}

export interface ReplicaInput extends Partial<ReplicaCapacity> {
  name: string;
  url: string;
  region: string;
  engine: EngineKind;
  model: string;
  homeLbId?: string | null | undefined;
}

async function requireLb(q: Queryable, lbId: string) {
  const { db, tables } = q;
  // Locked: the replica's re-home (rehomedTarget) is read from this row, and a failover of the LB
  // committing meanwhile on PostgreSQL would leave the replica served by the failed LB.
  const [lb] = await forUpdate(q, db.select().from(tables.loadBalancers).where(eq(tables.loadBalancers.id, lbId)).limit(1));
  if (!lb) throw precondition(`unknown load balancer "${lbId}" as home LB`);
  return lb;
}

/**
 * A home LB the operator named, which must be in the replica's region. In via-peer mode an LB routes
 * directly only to the replicas of its own region (lb-core's isLocalCandidate) and only the home LB
 * lists a replica, so a replica homed on another region's LB got no traffic there; and failing that
 * LB over would move the replica with it. (A failover's stand-in in another region is a re-home,
 * `rehomedToLbId`, not a home.)
 */
async function requireHomeIn(q: Queryable, lbId: string, regionId: string, fix = "leave it out for the region's default") {
  const lb = await requireLb(q, lbId);
  if (lb.regionId !== regionId) {
    const names = await regionNamesById(q);
    const [lbRegion, region] = [names.get(lb.regionId) ?? lb.regionId, names.get(regionId) ?? regionId];
    throw invalid(`home LB "${lb.name}" is in ${lbRegion}, not ${region}: a replica's home LB must be in its region (${fix})`);
  }
  return lb;
}

/** The default home LB re-read with its row locked (see requireLb). */
async function lockedHome(q: Queryable, home: Awaited<ReturnType<typeof requireLb>> | null) {
  return home ? await requireLb(q, home.id) : null;
}

async function replicaExists({ db, tables }: Queryable, where: SQL): Promise<boolean> {
  return (await db.select({ id: tables.replicas.id }).from(tables.replicas).where(where).limit(1)).length > 0;
}

/** No home LB given: the region's default (home-lb.ts), written into the row so it is explicit. */
export async function createReplica(rt: ServiceRuntime, actor: Actor, input: ReplicaInput, fixedId?: string): Promise<{ id: string }> {
  const url = requireHttpUrl("url", input.url);
  const capacity = requireCapacity(input);
  const id = await rt.store.transaction(async (tx) => {
    const { replicas } = tx.tables;
    if (await replicaExists(tx, sameName(replicas.name, input.name))) {
      throw conflict(`a replica named "${input.name}" already exists`);
    }
    const region = await requireRegion(tx, input.region);
    const home = input.homeLbId ? await requireHomeIn(tx, input.homeLbId, region.id) : await lockedHome(tx, await defaultHomeLb(tx, region.id));
    const id = fixedId ?? (await newId(input.name, (candidate) => replicaExists(tx, eq(replicas.id, candidate))));
    const row = {
      id,
      name: input.name,
      url,
      regionId: region.id,
      engine: input.engine,
      model: input.model,
      state: "enabled" as const,
      homeLbId: home?.id ?? null,
      // Homed on a failed-over LB: served by its stand-in until failback, like the replicas it owned.
      rehomedToLbId: rehomedTarget(home),
      maxConcurrency: capacity.maxConcurrency ?? null,
      cacheCapacityTokens: capacity.cacheCapacityTokens ?? null,
      createdAt: Date.now(),
    };
    await tx.db.insert(replicas).values(row);
    await recordAudit(tx, actor, "replica.create", `replica:${id}`, null, row);
    return id;
  });
  await afterCommit(rt, "replica.create", { publish: () => rt.publisher.publishAll() });
  return { id };
}

export async function updateReplica(rt: ServiceRuntime, actor: Actor, input: { id: string } & Partial<ReplicaInput>): Promise<void> {
  const capacity = requireCapacity(input);
  await rt.store.transaction(async (tx) => {
    const { replicas } = tx.tables;
    const [before] = await tx.db.select().from(replicas).where(eq(replicas.id, input.id)).limit(1);
    if (!before) throw notFound("replica", input.id);
    if (
      input.name !== undefined &&
      input.name !== before.name &&
      (await replicaExists(tx, and(sameName(replicas.name, input.name), ne(replicas.id, input.id))!))
    ) {
      throw conflict(`a replica named "${input.name}" already exists`);
    }
    const regionId = input.region !== undefined ? (await requireRegion(tx, input.region)).id : before.regionId;
    // undefined: the home stays (it must be in the region the replica moves to); null: back to the
    // region's default, as on create. A replica without a home (its region had no LB) that moves
    // takes the new region's default, as one created there would.
    const unhomedMove = input.homeLbId === undefined && regionId !== before.regionId && before.homeLbId === null;
    const home = input.homeLbId
      ? await requireHomeIn(tx, input.homeLbId, regionId)
      : input.homeLbId === null || unhomedMove
        ? await lockedHome(tx, await defaultHomeLb(tx, regionId))
        : undefined;
    if (home === undefined && regionId !== before.regionId && before.homeLbId !== null) {
      await requireHomeIn(tx, before.homeLbId, regionId, "give homeLbId with the new region, null for its default");
    }
    const after: ReplicaRow = {
      ...before,
      name: input.name ?? before.name,
      url: input.url !== undefined ? requireHttpUrl("url", input.url) : before.url,
      regionId,
      engine: input.engine ?? before.engine,
      model: input.model ?? before.model,
      homeLbId: home === undefined ? before.homeLbId : (home?.id ?? null),
      rehomedToLbId: home === undefined ? before.rehomedToLbId : rehomedTarget(home),
      maxConcurrency: capacity.maxConcurrency === undefined ? before.maxConcurrency : capacity.maxConcurrency,
      cacheCapacityTokens: capacity.cacheCapacityTokens === undefined ? before.cacheCapacityTokens : capacity.cacheCapacityTokens,
    };
    // Only what the operator changed is written: a failover committing between the read above and
    // this write (PostgreSQL) re-homed the replica, and writing the old rehomedToLbId back would
    // leave it served by the failed LB. The home columns are written only with a new home, whose
    // LB row is locked (requireLb, lockedHome).
    const changed = (Object.keys(after) as (keyof ReplicaRow)[]).filter((k) => after[k] !== before[k]);
    if (home !== undefined) changed.push("homeLbId", "rehomedToLbId");
    const patch = Object.fromEntries([...new Set(changed)].map((k) => [k, after[k]])) as Partial<ReplicaRow>;
    if (Object.keys(patch).length > 0) await tx.db.update(replicas).set(patch).where(eq(replicas.id, input.id));
    await recordAudit(tx, actor, "replica.update", `replica:${input.id}`, before, after);
  });
  await afterCommit(rt, "replica.update", { publish: () => rt.publisher.publishAll() });
}

export async function setReplicaState(rt: ServiceRuntime, actor: Actor, input: { id: string; state: ReplicaState }): Promise<void> {
  await rt.store.transaction(async (tx) => {
    const { replicas } = tx.tables;
    const [before] = await tx.db.select().from(replicas).where(eq(replicas.id, input.id)).limit(1);
    if (!before) throw notFound("replica", input.id);
    await tx.db.update(replicas).set({ state: input.state }).where(eq(replicas.id, input.id));
    await recordAudit(
      tx,
      actor,
      `replica.${input.state === "enabled" ? "enable" : input.state === "disabled" ? "disable" : "drain"}`,
      `replica:${input.id}`,
      { state: before.state },
      { state: input.state },
    );
  });
  await afterCommit(rt, "replica.set-state", { publish: () => rt.publisher.publishAll() });
}

export async function deleteReplica(rt: ServiceRuntime, actor: Actor, input: { id: string }): Promise<void> {
  await rt.store.transaction(async (tx) => {
    const { replicas } = tx.tables;
    const [before] = await tx.db.select().from(replicas).where(eq(replicas.id, input.id)).limit(1);
    if (!before) throw notFound("replica", input.id);
    await tx.db.delete(replicas).where(eq(replicas.id, input.id));
    await recordAudit(tx, actor, "replica.delete", `replica:${input.id}`, before, null);
  });
  await afterCommit(rt, "replica.delete", { publish: () => rt.publisher.publishAll() });
}
