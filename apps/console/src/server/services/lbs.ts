// Load balancers: CRUD, policy, failover/failback and the entrypoint map.
import "server-only";
import { desc, eq } from "drizzle-orm";
import { POLICY_NAMES } from "@meridian/routing";
import { entrypoints, lbConfigs, loadBalancers, replicas, type LoadBalancerRow } from "@meridian/db";
import { regionNamesById } from "../region-names";
import { type Actor, recordAudit } from "../audit-trail";
import { conflict, invalid, notFound, precondition } from "../errors";
import { effectiveHome } from "../runtime/config-builder";
import type { EntrypointResolution } from "../runtime/entrypoint-resolver";
import type { FailoverResult } from "../runtime/failover";
import type { ServiceRuntime } from "./context";
import { assignDefaultHomes } from "./home-lb";
import { newId } from "./ids";
import { requireRegion } from "./regions";
import { requireHttpUrl } from "./validation";

export type CrossRegion = LoadBalancerRow["crossRegion"];

export interface LbView {
  id: string;
  name: string;
  url: string;
  adminUrl: string | null;
  region: string;
  regionId: string;
  state: LoadBalancerRow["state"];
  /** The last probe answered (false until the first probe does). */
  healthy: boolean;
  /** False until the first probe finished (healthy is then not yet meaningful). */
  probed: boolean;
  consecutiveFailures: number;
  lastError: string | null;
  policy: string;
  crossRegion: CrossRegion;
  weights: { rtt: number; queue: number };
  configVersion: number;
  ackedVersion: number;
  /** The version the LB itself reports running (from /admin/state). */
  runningVersion: number | null;
  pushError: string | null;
  /** Replicas it serves as local (its own and any re-homed to it). */
  replicas: string[];
  failedOverTo: string | null;
  /** Failed over by the health monitor (an operator's failover is never undone automatically). */
  failedOverAutomatically: boolean;
  /** When the console fails it back on its own if it keeps answering; null when it will not
   * (not failed over automatically, not answering yet, or automatic failback off). */
  autoFailbackAt: number | null;
  entrypointFor: string[];
}

export function listLbs(rt: ServiceRuntime): LbView[] {
  const regionNames = regionNamesById(rt.db);
  const allReplicas = rt.db.select().from(replicas).orderBy(replicas.id).all();
  const entries = rt.db.select().from(entrypoints).all();
  return rt.db
    .select()
    .from(loadBalancers)
    .orderBy(loadBalancers.name)
    .all()
    .map((lb) => {
      const health = rt.lbHealth.lb(lb.id);
      return {
        id: lb.id,
        name: lb.name,
        url: lb.url,
        adminUrl: lb.adminUrl,
        region: regionNames.get(lb.regionId) ?? lb.regionId,
        regionId: lb.regionId,
        state: lb.state,
        healthy: health?.healthy === true,
        probed: health !== undefined && health.healthy !== null,
        consecutiveFailures: health?.consecutiveFailures ?? 0,
        lastError: health?.error ?? null,
        policy: lb.policy,
        crossRegion: lb.crossRegion,
        weights: { rtt: lb.weightRtt, queue: lb.weightQueue },
        configVersion: lb.configVersion,
        ackedVersion: lb.ackedVersion,
        runningVersion: health?.state?.configVersion ?? null,
        pushError: rt.publisher.status(lb.id).lastError,
        replicas: allReplicas.filter((r) => effectiveHome(r) === lb.id).map((r) => r.id),
        failedOverTo: lb.failedOverTo,
        failedOverAutomatically: lb.failedOverAutomatically,
        autoFailbackAt: rt.autoFailback.dueAt(lb),
        entrypointFor: entries.filter((e) => e.lbId === lb.id).map((e) => regionNames.get(e.regionId) ?? e.regionId),
      };
    });
}

export function lbById(rt: ServiceRuntime, input: { id: string }) {
  const view = listLbs(rt).find((lb) => lb.id === input.id);
  if (!view) throw notFound("load balancer", input.id);
  const configs = rt.db
    .select()
    .from(lbConfigs)
    .where(eq(lbConfigs.lbId, input.id))
    .orderBy(desc(lbConfigs.version))
    .limit(20)
    .all()
    .map((c) => ({ version: c.version, createdAt: c.createdAt, acknowledgedAt: c.acknowledgedAt, config: JSON.parse(c.json) as unknown }));
  return { ...view, configs, live: rt.lbHealth.lb(input.id)?.state ?? null };
}

export interface LbInput {
  name: string;
  url: string;
  adminUrl?: string | null | undefined;
  region: string;
  policy?: string | undefined;
  crossRegion?: CrossRegion | undefined;
}

function requirePolicy(policy: string): string {
  if (!(POLICY_NAMES as readonly string[]).includes(policy)) {
    throw invalid(`unknown policy "${policy}"; expected one of ${POLICY_NAMES.join(", ")}`);
  }
  return policy;
}

export function createLb(rt: ServiceRuntime, actor: Actor, input: LbInput, fixedId?: string): { id: string } {
  const url = requireHttpUrl("url", input.url);
  const adminUrl = input.adminUrl ? requireHttpUrl("adminUrl", input.adminUrl) : null;
  const policy = requirePolicy(input.policy ?? "gorgo");
  const id = rt.db.transaction((tx) => {
    if (tx.select().from(loadBalancers).where(eq(loadBalancers.name, input.name)).get()) {
      throw conflict(`a load balancer named "${input.name}" already exists`);
    }
    const region = requireRegion(tx, input.region);
    const id = fixedId ?? newId(input.name, (candidate) => !!tx.select().from(loadBalancers).where(eq(loadBalancers.id, candidate)).get());
    const now = Date.now();
    const row = {
      id,
      name: input.name,
      url,
      adminUrl,
      regionId: region.id,
      policy,
      crossRegion: input.crossRegion ?? "direct",
      createdAt: now,
    };
    tx.insert(loadBalancers).values(row).run();
    // The first LB of a region becomes its entrypoint.
    if (!tx.select().from(entrypoints).where(eq(entrypoints.regionId, region.id)).get()) {
      tx.insert(entrypoints).values({ regionId: region.id, lbId: id, updatedAt: now }).run();
    }
    recordAudit(tx, actor, "lb.create", `lb:${id}`, null, row);
    // Replicas created while their region had no LB belong to it now.
    assignDefaultHomes(tx, actor, region.id);
    return id;
  });
  rt.tuners.ensure(id);
  rt.publisher.publishAll();
  rt.telemetry.sync();
  return { id };
}

export function updateLb(rt: ServiceRuntime, actor: Actor, input: { id: string } & Partial<Omit<LbInput, "policy" | "crossRegion">>): void {
  rt.db.transaction((tx) => {
    const before = tx.select().from(loadBalancers).where(eq(loadBalancers.id, input.id)).get();
    if (!before) throw notFound("load balancer", input.id);
    if (input.name !== undefined && input.name !== before.name && tx.select().from(loadBalancers).where(eq(loadBalancers.name, input.name)).get()) {
      throw conflict(`a load balancer named "${input.name}" already exists`);
    }
    const after: LoadBalancerRow = {
      ...before,
      name: input.name ?? before.name,
      url: input.url !== undefined ? requireHttpUrl("url", input.url) : before.url,
      adminUrl: input.adminUrl === undefined ? before.adminUrl : input.adminUrl ? requireHttpUrl("adminUrl", input.adminUrl) : null,
      regionId: input.region !== undefined ? requireRegion(tx, input.region).id : before.regionId,
    };
    tx.update(loadBalancers)
      .set({ name: after.name, url: after.url, adminUrl: after.adminUrl, regionId: after.regionId })
      .where(eq(loadBalancers.id, input.id))
      .run();
    recordAudit(tx, actor, "lb.update", `lb:${input.id}`, before, after);
  });
  rt.publisher.publishAll();
  rt.telemetry.sync();
}

export function deleteLb(rt: ServiceRuntime, actor: Actor, input: { id: string }): void {
  rt.db.transaction((tx) => {
    const before = tx.select().from(loadBalancers).where(eq(loadBalancers.id, input.id)).get();
    if (!before) throw notFound("load balancer", input.id);
    const homed = tx
      .select()
      .from(replicas)
      .all()
      .filter((r) => r.homeLbId === input.id || r.rehomedToLbId === input.id);
    if (homed.length > 0) {
      throw precondition(
        `load balancer "${before.name}" still serves ${homed.length} replica(s) (${homed.map((r) => r.name).join(", ")}); move or delete them first`,
      );
    }
    const standingIn = tx.select().from(loadBalancers).where(eq(loadBalancers.failedOverTo, input.id)).all();
    if (standingIn.length > 0) {
      throw precondition(`load balancer "${before.name}" stands in for failed-over ${standingIn.map((l) => `"${l.name}"`).join(", ")}; fail them back first`);
    }
    const entries = tx.select().from(entrypoints).where(eq(entrypoints.lbId, input.id)).all();
    tx.delete(loadBalancers).where(eq(loadBalancers.id, input.id)).run();
    // Its regions' entrypoints move to another LB of the same region when there is one.
    for (const entry of entries) {
      const replacement = tx.select().from(loadBalancers).where(eq(loadBalancers.regionId, entry.regionId)).get();
      if (replacement) tx.insert(entrypoints).values({ regionId: entry.regionId, lbId: replacement.id, updatedAt: Date.now() }).run();
    }
    recordAudit(tx, actor, "lb.delete", `lb:${input.id}`, before, null);
  });
  rt.tuners.forget(input.id);
  rt.publisher.forget(input.id);
  rt.lbHealth.forget(input.id);
  rt.telemetry.sync();
  rt.publisher.publishAll();
}

export function setPolicy(rt: ServiceRuntime, actor: Actor, input: { id: string; policy: string; crossRegion: CrossRegion }): void {
  const policy = requirePolicy(input.policy);
  rt.db.transaction((tx) => {
    const before = tx.select().from(loadBalancers).where(eq(loadBalancers.id, input.id)).get();
    if (!before) throw notFound("load balancer", input.id);
    tx.update(loadBalancers).set({ policy, crossRegion: input.crossRegion }).where(eq(loadBalancers.id, input.id)).run();
    recordAudit(
      tx,
      actor,
      "lb.set-policy",
      `lb:${input.id}`,
      { policy: before.policy, crossRegion: before.crossRegion },
      { policy, crossRegion: input.crossRegion },
    );
  });
  rt.publisher.publish(input.id);
}

export function failoverLb(rt: ServiceRuntime, actor: Actor, input: { id: string }): FailoverResult {
  return rt.failover.failover(input.id, actor);
}

export function failbackLb(rt: ServiceRuntime, actor: Actor, input: { id: string }): FailoverResult {
  return rt.failover.failback(input.id, actor);
}

/** Region name → where its clients go: the assigned LB, a fallback while it is failed, or nothing
 * (an alarm); see entrypoint-resolver.ts. */
export function entrypointMap(rt: ServiceRuntime): Record<string, EntrypointResolution> {
  return Object.fromEntries(rt.entrypoints.resolve().map((r) => [r.region, r]));
}
