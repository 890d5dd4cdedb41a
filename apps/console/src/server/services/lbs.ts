// Load balancers: CRUD, policy, failover/failback and the entrypoint map.
import "server-only";
import { and, desc, eq, ne, or } from "drizzle-orm";
import { POLICY_NAMES } from "@meridian/routing";
import type { LoadBalancerRow, Queryable } from "@meridian/db";
import { regionNamesById } from "../region-names";
import { type Actor, recordAudit } from "../audit-trail";
import { conflict, invalid, notFound, precondition } from "../errors";
import { effectiveHome } from "../runtime/config-builder";
import type { EntrypointResolution } from "../runtime/entrypoint-resolver";
import type { FailoverResult } from "../runtime/failover";
import { forUpdate } from "../runtime/row-lock";
import { afterCommit } from "./after-commit";
import type { ServiceRuntime } from "./context";
import { assignDefaultHomes } from "./home-lb";
import { claimEntrypoint, entrypointHeldAway, handOverEntrypoints } from "./lb-entrypoints";
import { newId } from "./ids";
import { issueFirstToken, lbCredentialView, type LbCredentialView } from "./lb-tokens";
import { type LimitsSet, limitsView, type LimitsView, requireLimits } from "./lbs-limits";
import { type RoutingSettingsSet, requireRoutingSettings, routingSettingsView, type RoutingSettingsView } from "./lbs-routing-settings";
import { requireRegion } from "./regions";
import { requireHttpUrl, sameName } from "./validation";

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
  /** The request limits the console pushes: those stored, the rest the protocol's defaults. */
  limits: LimitsView;
  /** Its probes, index settings and sessionKeyBlocks the console pushes, stored as the limits are. */
  routingSettings: RoutingSettingsView;
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
  /** Its token, rotation and proof (never a secret). */
  credential: LbCredentialView;
}

export async function listLbs(rt: ServiceRuntime): Promise<LbView[]> {
  const { db, tables } = rt.store;
  const { entrypoints, loadBalancers, replicas } = tables;
  const regionNames = await regionNamesById(rt.store);
  const allReplicas = await db.select().from(replicas).orderBy(replicas.id);
  const entries = await db.select().from(entrypoints);
  const rows = await db.select().from(loadBalancers).orderBy(loadBalancers.name);
  const views: LbView[] = [];
  for (const lb of rows) {
    const health = await rt.lbHealth.lb(lb.id);
    views.push({
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
      limits: limitsView(lb.limitsJson),
      routingSettings: routingSettingsView(lb.routingSettingsJson),
      configVersion: lb.configVersion,
      ackedVersion: lb.ackedVersion,
      runningVersion: health?.state?.configVersion ?? null,
      pushError: (await rt.publisher.status(lb.id)).lastError,
      replicas: allReplicas.filter((r) => effectiveHome(r) === lb.id).map((r) => r.id),
      failedOverTo: lb.failedOverTo,
      failedOverAutomatically: lb.failedOverAutomatically,
      autoFailbackAt: await rt.autoFailback.dueAt(lb),
      entrypointFor: entries.filter((e) => e.lbId === lb.id).map((e) => regionNames.get(e.regionId) ?? e.regionId),
      credential: await lbCredentialView(rt, lb),
    });
  }
  return views;
}

export async function lbById(rt: ServiceRuntime, input: { id: string }) {
  const view = (await listLbs(rt)).find((lb) => lb.id === input.id);
  if (!view) throw notFound("load balancer", input.id);
  const { db, tables } = rt.store;
  const { lbConfigs } = tables;
  const configs = (await db.select().from(lbConfigs).where(eq(lbConfigs.lbId, input.id)).orderBy(desc(lbConfigs.version)).limit(20)).map((c) => ({
    version: c.version,
    createdAt: c.createdAt,
    acknowledgedAt: c.acknowledgedAt,
    config: JSON.parse(c.json) as unknown,
  }));
  return { ...view, configs, live: (await rt.lbHealth.lb(input.id))?.state ?? null };
}

export interface LbInput {
  name: string;
  url: string;
  adminUrl?: string | null | undefined;
  region: string;
  policy?: string | undefined;
  crossRegion?: CrossRegion | undefined;
  /** The LB's request limits (only those set; the rest are the defaults). Left out on create, the
   * console adopts the limits the LB runs once it answers (runtime/lb-settings-adoption.ts). On
   * update it replaces the whole set: `{}` puts every limit back to its default. */
  limits?: LimitsSet | undefined;
  /** Its probes, index settings and sessionKeyBlocks (only those set), as `limits`: left out on
   * create, adopted from the LB with its limits (unless the limits are given); on update the whole
   * set is replaced, `{}` puts every one back to its default. */
  routingSettings?: RoutingSettingsSet | undefined;
}

function requirePolicy(policy: string): string {
  if (!(POLICY_NAMES as readonly string[]).includes(policy)) {
    throw invalid(`unknown policy "${policy}"; expected one of ${POLICY_NAMES.join(", ")}`);
  }
  return policy;
}

/** Creates the LB with its first token, returned once: the operator configures the LB with it
 * (MERIDIAN_LB_TOKEN); the console never shows it again. */
export async function createLb(rt: ServiceRuntime, actor: Actor, input: LbInput, fixedId?: string): Promise<{ id: string; keyId: string; token: string }> {
  const url = requireHttpUrl("url", input.url);
  const adminUrl = input.adminUrl ? requireHttpUrl("adminUrl", input.adminUrl) : null;
  const policy = requirePolicy(input.policy ?? "gorgo");
  const limitsJson = input.limits !== undefined ? requireLimits(input.limits) : null;
  const routingSettingsJson = input.routingSettings !== undefined ? requireRoutingSettings(input.routingSettings) : null;
  const { id, keyId, token } = await rt.store.transaction(async (tx) => {
    const { loadBalancers } = tx.tables;
    if ((await tx.db.select({ id: loadBalancers.id }).from(loadBalancers).where(sameName(loadBalancers.name, input.name)).limit(1)).length > 0) {
      throw conflict(`a load balancer named "${input.name}" already exists`);
    }
    const region = await requireRegion(tx, input.region);
    const id =
      fixedId ??
      (await newId(
        input.name,
        async (candidate) => (await tx.db.select({ id: loadBalancers.id }).from(loadBalancers).where(eq(loadBalancers.id, candidate)).limit(1)).length > 0,
      ));
    const now = Date.now();
    const row = {
      id,
      name: input.name,
      url,
      adminUrl,
      regionId: region.id,
      policy,
      crossRegion: input.crossRegion ?? "direct",
      limitsJson,
      routingSettingsJson,
      createdAt: now,
    };
    await tx.db.insert(loadBalancers).values(row);
    await recordAudit(tx, actor, "lb.create", `lb:${id}`, null, row);
    // The first LB of a region becomes its entrypoint (or the first since its last LB left failed over).
    await claimEntrypoint(tx, actor, region.id, { id, state: "healthy" });
    // Replicas created while their region had no LB belong to it now.
    await assignDefaultHomes(tx, actor, region.id);
    return { id, ...(await issueFirstToken(rt, tx, actor, id)) };
  });
  // The LB and its token are saved: the answer carries the token whatever its follow-ups do.
  await afterCommit(rt, "lb.create", {
    tuner: () => rt.tuners.ensure(id),
    publish: () => rt.publisher.publishAll(),
    telemetry: () => rt.telemetry.sync(),
  });
  return { id, keyId, token };
}

export async function updateLb(rt: ServiceRuntime, actor: Actor, input: { id: string } & Partial<Omit<LbInput, "policy" | "crossRegion">>): Promise<void> {
  const limitsJson = input.limits !== undefined ? requireLimits(input.limits) : undefined;
  const routingSettingsJson = input.routingSettings !== undefined ? requireRoutingSettings(input.routingSettings) : undefined;
  await rt.store.transaction(async (tx) => {
    const { entrypoints, loadBalancers } = tx.tables;
    // Locked (PostgreSQL): a failover to this LB committing between the checks below and the move
    // would leave it standing in from another region; one waiting for the lock reads the move.
    const [before] = await forUpdate(tx, tx.db.select().from(loadBalancers).where(eq(loadBalancers.id, input.id)).limit(1));
    if (!before) throw notFound("load balancer", input.id);
    if (
      input.name !== undefined &&
      input.name !== before.name &&
      (
        await tx.db
          .select({ id: loadBalancers.id })
          .from(loadBalancers)
          .where(and(sameName(loadBalancers.name, input.name), ne(loadBalancers.id, input.id)))
          .limit(1)
      ).length > 0
    ) {
      throw conflict(`a load balancer named "${input.name}" already exists`);
    }
    const after: LoadBalancerRow = {
      ...before,
      name: input.name ?? before.name,
      url: input.url !== undefined ? requireHttpUrl("url", input.url) : before.url,
      adminUrl: input.adminUrl === undefined ? before.adminUrl : input.adminUrl ? requireHttpUrl("adminUrl", input.adminUrl) : null,
      regionId: input.region !== undefined ? (await requireRegion(tx, input.region)).id : before.regionId,
      limitsJson: limitsJson ?? before.limitsJson,
      routingSettingsJson: routingSettingsJson ?? before.routingSettingsJson,
    };
    const moved = after.regionId !== before.regionId;
    // A failed-over LB that moves leaves its old region's entrypoint to entrypointHeldAway: its
    // failback must not take the new region's (unless claimEntrypoint, below, leaves it one to take).
    if (moved && before.state === "failed-over") after.failedOverEntrypoint = false;
    // A move takes the LB out of its region as a delete does, and into the new one as a create does.
    if (moved) await requireServesNothing(tx, before, "home them on another LB of their region first");
    // Its old region's clients go to another LB there (another region's entrypoint it stands for stays).
    const leftBehind = moved
      ? await tx.db
          .select()
          .from(entrypoints)
          .where(and(eq(entrypoints.lbId, input.id), eq(entrypoints.regionId, before.regionId)))
      : [];
    const heldAway = moved ? await entrypointHeldAway(tx, before) : [];
    // Only what the operator changed is written, as updateReplica does: a column this edit did not
    // touch (the LB's own limits, adopted at its first probe) is never written back from the read.
    const patch = Object.fromEntries(
      (Object.keys(after) as (keyof LoadBalancerRow)[]).filter((k) => after[k] !== before[k]).map((k) => [k, after[k]]),
    ) as Partial<LoadBalancerRow>;
    if (Object.keys(patch).length > 0) await tx.db.update(loadBalancers).set(patch).where(eq(loadBalancers.id, input.id));
    if (moved) {
      await handOverEntrypoints(tx, leftBehind);
      await handOverEntrypoints(tx, heldAway, { keepUnlessReplaced: true });
      if (await claimEntrypoint(tx, actor, after.regionId, after)) {
        after.failedOverEntrypoint = true;
        await tx.db.update(loadBalancers).set({ failedOverEntrypoint: true }).where(eq(loadBalancers.id, input.id));
      }
    }
    await recordAudit(tx, actor, "lb.update", `lb:${input.id}`, before, after);
    if (moved) await assignDefaultHomes(tx, actor, after.regionId);
  });
  await afterCommit(rt, "lb.update", { publish: () => rt.publisher.publishAll(), telemetry: () => rt.telemetry.sync() });
}

/** An LB that leaves its region (deleted, or moved to another) may not leave anything of it behind:
 * no replica homed on it or re-homed to it, no failed-over LB it stands in for. */
async function requireServesNothing(tx: Queryable, lb: LoadBalancerRow, remedy: string): Promise<void> {
  const { loadBalancers, replicas } = tx.tables;
  const homed = await tx.db
    .select()
    .from(replicas)
    .where(or(eq(replicas.homeLbId, lb.id), eq(replicas.rehomedToLbId, lb.id)))
    .orderBy(replicas.name);
  if (homed.length > 0) {
    throw precondition(`load balancer "${lb.name}" still serves ${homed.length} replica(s) (${homed.map((r) => r.name).join(", ")}); ${remedy}`);
  }
  const standingIn = await tx.db.select().from(loadBalancers).where(eq(loadBalancers.failedOverTo, lb.id)).orderBy(loadBalancers.name);
  if (standingIn.length > 0) {
    throw precondition(`load balancer "${lb.name}" stands in for failed-over ${standingIn.map((l) => `"${l.name}"`).join(", ")}; fail them back first`);
  }
}

export async function deleteLb(rt: ServiceRuntime, actor: Actor, input: { id: string }): Promise<void> {
  await rt.store.transaction(async (tx) => {
    const { entrypoints, loadBalancers } = tx.tables;
    // Locked (PostgreSQL): a failover to this LB that committed between the check and the delete
    // would be undone by the foreign keys (its replicas back on the failed LB, the entrypoints
    // gone); failover locks its target too, so one of the two waits and then refuses.
    const [before] = await forUpdate(tx, tx.db.select().from(loadBalancers).where(eq(loadBalancers.id, input.id)).limit(1));
    if (!before) throw notFound("load balancer", input.id);
    await requireServesNothing(tx, before, "move or delete them first");
    const entries = await tx.db.select().from(entrypoints).where(eq(entrypoints.lbId, input.id));
    const heldAway = await entrypointHeldAway(tx, before);
    await tx.db.delete(loadBalancers).where(eq(loadBalancers.id, input.id));
    await handOverEntrypoints(tx, entries);
    await handOverEntrypoints(tx, heldAway, { keepUnlessReplaced: true });
    await recordAudit(tx, actor, "lb.delete", `lb:${input.id}`, before, null);
  });
  await afterCommit(rt, "lb.delete", {
    tuner: () => rt.tuners.forget(input.id),
    pushes: () => rt.publisher.forget(input.id),
    health: () => rt.lbHealth.forget(input.id),
    proofs: () => rt.lbProofs.forget(input.id),
    telemetry: () => rt.telemetry.sync(),
    publish: () => rt.publisher.publishAll(),
  });
}

export async function setPolicy(rt: ServiceRuntime, actor: Actor, input: { id: string; policy: string; crossRegion: CrossRegion }): Promise<void> {
  const policy = requirePolicy(input.policy);
  await rt.store.transaction(async (tx) => {
    const { loadBalancers } = tx.tables;
    const [before] = await tx.db.select().from(loadBalancers).where(eq(loadBalancers.id, input.id)).limit(1);
    if (!before) throw notFound("load balancer", input.id);
    await tx.db.update(loadBalancers).set({ policy, crossRegion: input.crossRegion }).where(eq(loadBalancers.id, input.id));
    await recordAudit(
      tx,
      actor,
      "lb.set-policy",
      `lb:${input.id}`,
      { policy: before.policy, crossRegion: before.crossRegion },
      { policy, crossRegion: input.crossRegion },
    );
  });
  await afterCommit(rt, "lb.set-policy", { publish: () => rt.publisher.publish(input.id) });
}

export async function failoverLb(rt: ServiceRuntime, actor: Actor, input: { id: string }): Promise<FailoverResult> {
  return await rt.failover.failover(input.id, actor);
}

export async function failbackLb(rt: ServiceRuntime, actor: Actor, input: { id: string }): Promise<FailoverResult> {
  return await rt.failover.failback(input.id, actor);
}

/** Region name → where its clients go: the assigned LB, a fallback while it is failed, or nothing
 * (an alarm); see entrypoint-resolver.ts. */
export async function entrypointMap(rt: ServiceRuntime): Promise<Record<string, EntrypointResolution>> {
  return Object.fromEntries((await rt.entrypoints.resolve()).map((r) => [r.region, r]));
}
