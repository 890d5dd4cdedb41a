// Client API keys, per region (apps/console/README.md, "Security"): created (the key is returned
// once and never stored: only its SHA-256), listed, revoked, and a region's "keys required" switch.
// Every change is audited with the key's public id and name and re-publishes the LB configs, which
// carry the hashes to the LBs that serve the region.
import "server-only";
import { and, eq, isNull } from "drizzle-orm";
import { MAX_CLIENT_KEYS_PER_CONFIG } from "@meridian/protocol";
import { generateClientKey, newClientKeyId, sha256Hex } from "@meridian/protocol/credentials";
import { type Actor, recordAudit } from "../audit-trail";
import { busy, conflict, notFound, precondition } from "../errors";
import { forUpdate } from "../runtime/row-lock";
import { afterCommit } from "./after-commit";
import type { ServiceRuntime } from "./context";
import { requireRegion } from "./regions";

/** Active keys per region: the per-key metric series stay bounded. The fleet as a whole stays within
 * the protocol's per-config bound (createClientKey). */
const MAX_ACTIVE_KEYS_PER_REGION = 200;

export interface ClientKeyView {
  id: string;
  name: string;
  region: string;
  createdAt: number;
  createdBy: string;
  revokedAt: number | null;
  revokedBy: string | null;
}

export interface ClientKeyRegionView {
  name: string;
  required: boolean;
  activeKeys: number;
}

export async function listClientKeys(rt: ServiceRuntime): Promise<{ regions: ClientKeyRegionView[]; keys: ClientKeyView[] }> {
  const { db, tables } = rt.store;
  const { clientKeys, regions } = tables;
  const allRegions = await db.select().from(regions).orderBy(regions.name);
  const names = new Map(allRegions.map((r) => [r.id, r.name]));
  const keys = (await db.select().from(clientKeys))
    .sort((a, b) => Number(a.revokedAt !== null) - Number(b.revokedAt !== null) || b.createdAt - a.createdAt)
    .map((k) => ({
      id: k.id,
      name: k.name,
      region: names.get(k.regionId) ?? k.regionId,
      createdAt: k.createdAt,
      createdBy: k.createdBy,
      revokedAt: k.revokedAt,
      revokedBy: k.revokedBy,
    }));
  return {
    regions: allRegions.map((r) => ({
      name: r.name,
      required: r.clientKeysRequired,
      activeKeys: keys.filter((k) => k.region === r.name && k.revokedAt === null).length,
    })),
    keys,
  };
}

/** Creates a key for a region; `key` is shown to the operator once and never again. */
export async function createClientKey(
  rt: ServiceRuntime,
  actor: Actor,
  input: { region: string; name: string },
): Promise<{ id: string; name: string; region: string; key: string }> {
  const created = await rt.store.transaction(async (tx) => {
    const { clientKeys, regions } = tx.tables;
    const region = await requireRegion(tx, input.region);
    // The checks below (name, per-region and fleet caps) read, then insert. On PostgreSQL two creations
    // at once would both pass them (two active keys named alike, a cap passed): every region's row is
    // locked first (in one order, so two creations cannot deadlock), and the second waits for the first.
    await forUpdate(tx, tx.db.select({ id: regions.id }).from(regions).orderBy(regions.id));
    const active = await tx.db
      .select()
      .from(clientKeys)
      .where(and(eq(clientKeys.regionId, region.id), isNull(clientKeys.revokedAt)));
    if (active.some((k) => k.name === input.name)) throw conflict(`region "${region.name}" already has an active key named "${input.name}"`);
    if (active.length >= MAX_ACTIVE_KEYS_PER_REGION)
      throw busy(`region "${region.name}" has ${active.length} active keys, the most it may have; revoke one first`);
    // After failovers one LB may stand in for every region and carry all their keys in its config,
    // which holds at most MAX_CLIENT_KEYS_PER_CONFIG: past it that LB would get no config at all.
    const fleetActive = (await tx.db.select({ id: clientKeys.id }).from(clientKeys).where(isNull(clientKeys.revokedAt))).length;
    if (fleetActive >= MAX_CLIENT_KEYS_PER_CONFIG) {
      throw busy(
        `the fleet has ${fleetActive} active keys, the most one LB's config can carry (an LB standing in for every region after failovers carries them all); revoke one first`,
      );
    }
    let id = newClientKeyId();
    while ((await tx.db.select({ id: clientKeys.id }).from(clientKeys).where(eq(clientKeys.id, id)).limit(1)).length > 0) id = newClientKeyId();
    const key = generateClientKey(id);
    const row = { id, regionId: region.id, name: input.name, sha256: sha256Hex(key), createdAt: Date.now(), createdBy: actor.username };
    await tx.db.insert(clientKeys).values(row);
    await recordAudit(tx, actor, "client-key.create", `client-key:${id}`, null, { id, name: input.name, region: region.name });
    return { id, name: input.name, region: region.name, key };
  });
  await afterCommit(rt, "client-key.create", { publish: () => rt.publisher.publishAll() });
  return created;
}

/** Revokes a key: it leaves every LB config at once (always allowed, even if it was the region's last). */
export async function revokeClientKey(rt: ServiceRuntime, actor: Actor, input: { id: string }): Promise<void> {
  await rt.store.transaction(async (tx) => {
    const { clientKeys } = tx.tables;
    const [before] = await tx.db.select().from(clientKeys).where(eq(clientKeys.id, input.id)).limit(1);
    if (!before) throw notFound("client key", input.id);
    if (before.revokedAt !== null) throw precondition(`client key "${before.name}" (${before.id}) is already revoked`);
    const revokedAt = Date.now();
    await tx.db.update(clientKeys).set({ revokedAt, revokedBy: actor.username }).where(eq(clientKeys.id, input.id));
    await recordAudit(tx, actor, "client-key.revoke", `client-key:${input.id}`, { id: before.id, name: before.name }, { revokedAt });
  });
  await afterCommit(rt, "client-key.revoke", { publish: () => rt.publisher.publishAll() });
}

/** Turns "keys required" on or off for a region's LBs. Turning it on needs an active key, so an
 * operator cannot lock every client out by accident. */
export async function setClientKeysRequired(rt: ServiceRuntime, actor: Actor, input: { region: string; required: boolean }): Promise<void> {
  await rt.store.transaction(async (tx) => {
    const { clientKeys, regions } = tx.tables;
    const region = await requireRegion(tx, input.region);
    if (input.required) {
      const [active] = await tx.db
        .select({ id: clientKeys.id })
        .from(clientKeys)
        .where(and(eq(clientKeys.regionId, region.id), isNull(clientKeys.revokedAt)))
        .limit(1);
      if (!active) throw precondition(`region "${region.name}" has no active client key; create one before requiring keys`);
    }
    await tx.db.update(regions).set({ clientKeysRequired: input.required }).where(eq(regions.id, region.id));
    await recordAudit(tx, actor, "region.client-keys-required", `region:${region.id}`, { required: region.clientKeysRequired }, { required: input.required });
  });
  await afterCommit(rt, "region.client-keys-required", { publish: () => rt.publisher.publishAll() });
}
