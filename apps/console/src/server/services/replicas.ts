// Replicas: CRUD and state (enabled / disabled / draining). Every change is pushed to the LBs
// whose config it alters (the publisher skips LBs whose config did not change).
import "server-only";
import { eq } from "drizzle-orm";
import { loadBalancers, replicas, type ReplicaRow } from "@meridian/db";
import { regionNamesById } from "../region-names";
import { type Actor, recordAudit } from "../audit-trail";
import { conflict, notFound, precondition } from "../errors";
import { effectiveHome } from "../runtime/config-builder";
import { replicaWarningsFrom, type ReplicaWarning } from "../runtime/replica-warnings";
import type { SharePoint } from "../runtime/rolling-stats";
import type { DbLike, ServiceRuntime } from "./context";
import { defaultHomeLb, rehomedTarget } from "./home-lb";
import { newId } from "./ids";
import { requireRegion } from "./regions";
import { requireHttpUrl } from "./validation";

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
  healthy: boolean;
  inFlight: number;
  queuedTokens: number;
  share: number;
  cacheHitRate: number | null;
  predictionAccuracy: number | null;
  rttMs: number | null;
  /** Setup problems the operator should see (no RTT emulation, a model its LB's clients do not use). */
  warnings: ReplicaWarning[];
}

export function listReplicas(rt: ServiceRuntime): ReplicaView[] {
  const regionNames = regionNamesById(rt.db);
  const lbNames = new Map(
    rt.db
      .select()
      .from(loadBalancers)
      .all()
      .map((l) => [l.id, l.name]),
  );
  const windowStats = rt.telemetry.stats.replicaStats();
  const warnings = replicaWarningsFrom(rt.db, (lbId) => rt.lbHealth.lb(lbId)?.state ?? null);
  return rt.db
    .select()
    .from(replicas)
    .orderBy(replicas.name)
    .all()
    .map((r) => {
      const serving = effectiveHome(r);
      const live = rt.lbHealth.replica(r.id, serving);
      const stats = windowStats.get(r.id);
      return {
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
        healthy: live?.healthy ?? false,
        inFlight: live?.inFlight ?? 0,
        queuedTokens: live?.queuedTokens ?? 0,
        share: stats?.share ?? 0,
        cacheHitRate: stats?.cacheHitRate ?? live?.cacheHitRate ?? null,
        predictionAccuracy: stats?.predictionAccuracy ?? live?.predictionAccuracy ?? null,
        rttMs: live?.rttMs ?? null,
        warnings: warnings.get(r.id) ?? [],
      };
    });
}

export function shareHistory(rt: ServiceRuntime): SharePoint[] {
  return rt.telemetry.stats.shareSeries();
}

export interface ReplicaInput {
  name: string;
  url: string;
  region: string;
  engine: EngineKind;
  model: string;
  homeLbId?: string | null | undefined;
}

function requireLb(db: DbLike, lbId: string) {
  const lb = db.select().from(loadBalancers).where(eq(loadBalancers.id, lbId)).get();
  if (!lb) throw precondition(`unknown load balancer "${lbId}" as home LB`);
  return lb;
}

/** No home LB given: the region's default (home-lb.ts), written into the row so it is explicit. */
export function createReplica(rt: ServiceRuntime, actor: Actor, input: ReplicaInput, fixedId?: string): { id: string } {
  const url = requireHttpUrl("url", input.url);
  const id = rt.db.transaction((tx) => {
    if (tx.select().from(replicas).where(eq(replicas.name, input.name)).get()) {
      throw conflict(`a replica named "${input.name}" already exists`);
    }
    const region = requireRegion(tx, input.region);
    const home = input.homeLbId ? requireLb(tx, input.homeLbId) : defaultHomeLb(tx, region.id);
    const id = fixedId ?? newId(input.name, (candidate) => !!tx.select().from(replicas).where(eq(replicas.id, candidate)).get());
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
      createdAt: Date.now(),
    };
    tx.insert(replicas).values(row).run();
    recordAudit(tx, actor, "replica.create", `replica:${id}`, null, row);
    return id;
  });
  rt.publisher.publishAll();
  return { id };
}

export function updateReplica(rt: ServiceRuntime, actor: Actor, input: { id: string } & Partial<ReplicaInput>): void {
  rt.db.transaction((tx) => {
    const before = tx.select().from(replicas).where(eq(replicas.id, input.id)).get();
    if (!before) throw notFound("replica", input.id);
    if (input.name !== undefined && input.name !== before.name && tx.select().from(replicas).where(eq(replicas.name, input.name)).get()) {
      throw conflict(`a replica named "${input.name}" already exists`);
    }
    const regionId = input.region !== undefined ? requireRegion(tx, input.region).id : before.regionId;
    // undefined: the home stays; null: back to the region's default, as on create.
    const home = input.homeLbId ? requireLb(tx, input.homeLbId) : input.homeLbId === null ? defaultHomeLb(tx, regionId) : undefined;
    const after: ReplicaRow = {
      ...before,
      name: input.name ?? before.name,
      url: input.url !== undefined ? requireHttpUrl("url", input.url) : before.url,
      regionId,
      engine: input.engine ?? before.engine,
      model: input.model ?? before.model,
      homeLbId: home === undefined ? before.homeLbId : (home?.id ?? null),
      rehomedToLbId: home === undefined ? before.rehomedToLbId : rehomedTarget(home),
    };
    tx.update(replicas)
      .set({
        name: after.name,
        url: after.url,
        regionId: after.regionId,
        engine: after.engine,
        model: after.model,
        homeLbId: after.homeLbId,
        rehomedToLbId: after.rehomedToLbId,
      })
      .where(eq(replicas.id, input.id))
      .run();
    recordAudit(tx, actor, "replica.update", `replica:${input.id}`, before, after);
  });
  rt.publisher.publishAll();
}

export function setReplicaState(rt: ServiceRuntime, actor: Actor, input: { id: string; state: ReplicaState }): void {
  rt.db.transaction((tx) => {
    const before = tx.select().from(replicas).where(eq(replicas.id, input.id)).get();
    if (!before) throw notFound("replica", input.id);
    tx.update(replicas).set({ state: input.state }).where(eq(replicas.id, input.id)).run();
    recordAudit(
      tx,
      actor,
      `replica.${input.state === "enabled" ? "enable" : input.state === "disabled" ? "disable" : "drain"}`,
      `replica:${input.id}`,
      { state: before.state },
      { state: input.state },
    );
  });
  rt.publisher.publishAll();
}

export function deleteReplica(rt: ServiceRuntime, actor: Actor, input: { id: string }): void {
  rt.db.transaction((tx) => {
    const before = tx.select().from(replicas).where(eq(replicas.id, input.id)).get();
    if (!before) throw notFound("replica", input.id);
    tx.delete(replicas).where(eq(replicas.id, input.id)).run();
    recordAudit(tx, actor, "replica.delete", `replica:${input.id}`, before, null);
  });
  rt.publisher.publishAll();
}
