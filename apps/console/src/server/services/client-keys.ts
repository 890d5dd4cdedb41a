// Client API keys, per region (apps/console/README.md, "Security"): created (the key is returned
// once and never stored: only its SHA-256), listed, revoked, and a region's "keys required" switch.
// Every change is audited with the key's public id and name and re-publishes the LB configs, which
// carry the hashes to the LBs that serve the region.
import "server-only";
import { and, eq, isNull } from "drizzle-orm";
import { clientKeys, regions } from "@meridian/db";
import { generateClientKey, newClientKeyId, sha256Hex } from "@meridian/protocol/credentials";
import { type Actor, recordAudit } from "../audit-trail";
import { busy, conflict, notFound, precondition } from "../errors";
import type { ServiceRuntime } from "./context";
import { requireRegion } from "./regions";

/** Active keys per region: the configs of the LBs serving several regions stay well under the
 * protocol's per-config bound, and so do the per-key metric series. */
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

export function listClientKeys(rt: ServiceRuntime): { regions: ClientKeyRegionView[]; keys: ClientKeyView[] } {
  const allRegions = rt.db.select().from(regions).orderBy(regions.name).all();
  const names = new Map(allRegions.map((r) => [r.id, r.name]));
  const keys = rt.db
    .select()
    .from(clientKeys)
    .all()
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
export function createClientKey(
  rt: ServiceRuntime,
  actor: Actor,
  input: { region: string; name: string },
): { id: string; name: string; region: string; key: string } {
  const created = rt.db.transaction((tx) => {
    const region = requireRegion(tx, input.region);
    const active = tx
      .select()
      .from(clientKeys)
      .where(and(eq(clientKeys.regionId, region.id), isNull(clientKeys.revokedAt)))
      .all();
    if (active.some((k) => k.name === input.name)) throw conflict(`region "${region.name}" already has an active key named "${input.name}"`);
    if (active.length >= MAX_ACTIVE_KEYS_PER_REGION)
      throw busy(`region "${region.name}" has ${active.length} active keys, the most it may have; revoke one first`);
    let id = newClientKeyId();
    while (tx.select().from(clientKeys).where(eq(clientKeys.id, id)).get()) id = newClientKeyId();
    const key = generateClientKey(id);
    const row = { id, regionId: region.id, name: input.name, sha256: sha256Hex(key), createdAt: Date.now(), createdBy: actor.username };
    tx.insert(clientKeys).values(row).run();
    recordAudit(tx, actor, "client-key.create", `client-key:${id}`, null, { id, name: input.name, region: region.name });
    return { id, name: input.name, region: region.name, key };
  });
  rt.publisher.publishAll();
  return created;
}

/** Revokes a key: it leaves every LB config at once (always allowed, even if it was the region's last). */
export function revokeClientKey(rt: ServiceRuntime, actor: Actor, input: { id: string }): void {
  rt.db.transaction((tx) => {
    const before = tx.select().from(clientKeys).where(eq(clientKeys.id, input.id)).get();
    if (!before) throw notFound("client key", input.id);
    if (before.revokedAt !== null) throw precondition(`client key "${before.name}" (${before.id}) is already revoked`);
    const revokedAt = Date.now();
    tx.update(clientKeys).set({ revokedAt, revokedBy: actor.username }).where(eq(clientKeys.id, input.id)).run();
    recordAudit(tx, actor, "client-key.revoke", `client-key:${input.id}`, { id: before.id, name: before.name }, { revokedAt });
  });
  rt.publisher.publishAll();
}

/** Turns "keys required" on or off for a region's LBs. Turning it on needs an active key, so an
 * operator cannot lock every client out by accident. */
export function setClientKeysRequired(rt: ServiceRuntime, actor: Actor, input: { region: string; required: boolean }): void {
  rt.db.transaction((tx) => {
    const region = requireRegion(tx, input.region);
    if (input.required) {
      const active = tx
        .select()
        .from(clientKeys)
        .where(and(eq(clientKeys.regionId, region.id), isNull(clientKeys.revokedAt)))
        .get();
      if (!active) throw precondition(`region "${region.name}" has no active client key; create one before requiring keys`);
    }
    tx.update(regions).set({ clientKeysRequired: input.required }).where(eq(regions.id, region.id)).run();
    recordAudit(tx, actor, "region.client-keys-required", `region:${region.id}`, { required: region.clientKeysRequired }, { required: input.required });
  });
  rt.publisher.publishAll();
}
