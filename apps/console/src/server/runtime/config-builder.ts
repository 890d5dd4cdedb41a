// Builds the LbConfig an LB should run from the console's database. Pure with respect to the DB
// snapshot it reads: the same topology always yields the same config (bar the version), so the
// publisher can skip pushes that would change nothing.
import "server-only";
import { eq } from "drizzle-orm";
import { POLICY_NAMES, type PolicyName } from "@meridian/routing";
import { LB_CONFIG_SCHEMA, parseLbConfig, type LbConfig } from "@meridian/protocol";
import type { Queryable } from "@meridian/db";
import { regionNamesById } from "../region-names";
import { storedLimits } from "../services/lbs-limits";
import { storedRoutingSettings } from "../services/lbs-routing-settings";
import { clientAuthFor } from "./client-auth-config";
import { provenLbIds } from "./lb-proof-rows";
import { peerCredentialHashes } from "./lb-token-rows";

/** The LB that serves a replica as local: the failover target while re-homed, else its home. */
export function effectiveHome(replica: { homeLbId: string | null; rehomedToLbId: string | null }): string | null {
  return replica.rehomedToLbId ?? replica.homeLbId;
}

function asPolicy(name: string): PolicyName {
  return (POLICY_NAMES as readonly string[]).includes(name) ? (name as PolicyName) : "gorgo";
}

/**
 * Replicas an LB routes to:
 * - `via-peer` (SkyLB): only its local replicas (homed here, or re-homed here by a failover); the
 *   rest of the fleet is reached through peer LBs.
 * - `direct` (GORGO): every replica of the fleet is a candidate and the RTT term decides.
 * Peers are the other LBs that are not failed over and have proved they hold their token at their
 * current admin URL (lb_proofs), each with the hashes of its peer credentials: a listener registered
 * as an LB is polled by no LB until it proves itself, which it cannot.
 * Client keys: those of the LB's region and of every region whose entrypoint it is (a failover
 * moves a region's clients here with their keys); required when the LB's own region requires them.
 * A replica re-homed here by a failover is presented with this LB's region: meridian-proxy treats
 * the replicas of its own region as local (in via-peer mode only those are routed to directly).
 * Limits: the ones stored for the LB (set by an operator, or adopted from the LB once: see
 * lb-settings-adoption.ts), the rest at the protocol's defaults; so are its probes, index settings
 * and sessionKeyBlocks (lbs-routing-settings.ts). A replica's maxConcurrency and
 * cacheCapacityTokens go out when stored; left out, the LB learns them from the engine.
 */
export async function buildLbConfig(q: Queryable, lbId: string, version: number): Promise<LbConfig | null> {
  const { db, tables } = q;
  const { loadBalancers, replicas } = tables;
  const [lb] = await db.select().from(loadBalancers).where(eq(loadBalancers.id, lbId)).limit(1);
  if (!lb) return null;
  const regionNames = await regionNamesById(q);
  const allReplicas = await db.select().from(replicas).orderBy(replicas.id);
  const chosen = lb.crossRegion === "via-peer" ? allReplicas.filter((r) => effectiveHome(r) === lb.id) : allReplicas;
  const proven = await provenLbIds(q);
  const hashes = await peerCredentialHashes(q);
  const clientAuth = await clientAuthFor(q, lb, regionNames);
  const peers = (await db.select().from(loadBalancers).orderBy(loadBalancers.id)).filter(
    (peer) => peer.id !== lb.id && peer.state !== "failed-over" && proven.has(peer.id),
  );
  return parseLbConfig({
    schema: LB_CONFIG_SCHEMA,
    version,
    lbId: lb.id,
    region: regionNames.get(lb.regionId) ?? lb.regionId,
    policy: asPolicy(lb.policy),
    weights: { rtt: lb.weightRtt, queue: lb.weightQueue },
    // The tuner's running trial (validated with the rest: a malformed one fails the build loudly).
    ...(lb.trialJson !== null ? { trial: JSON.parse(lb.trialJson) as unknown } : {}),
    crossRegion: lb.crossRegion,
    replicas: chosen.map((r) => ({
      id: r.id,
      url: r.url,
      region: regionNames.get(r.rehomedToLbId === lb.id ? lb.regionId : r.regionId) ?? r.regionId,
      model: r.model,
      engine: r.engine,
      state: r.state,
      ...(r.maxConcurrency !== null ? { maxConcurrency: r.maxConcurrency } : {}),
      ...(r.cacheCapacityTokens !== null ? { cacheCapacityTokens: r.cacheCapacityTokens } : {}),
    })),
    peers: peers.map((peer) => ({
      id: peer.id,
      url: peer.url,
      region: regionNames.get(peer.regionId) ?? peer.regionId,
      credentialHashes: hashes.get(peer.id) ?? [],
    })),
    limits: storedLimits(lb.limitsJson),
    // probes, index, sessionKeyBlocks: each section given is partial, the schema fills the rest.
    ...storedRoutingSettings(lb.routingSettingsJson),
    clientAuth,
  });
}

/** The config without its version, for "did anything change" comparisons. */
export function configContent(config: LbConfig): string {
  const { version: _version, ...rest } = config;
  return JSON.stringify(rest);
}
