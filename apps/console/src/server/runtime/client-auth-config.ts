// The clientAuth section of an LB's config: which client API keys it accepts (hashes only) and
// whether it requires one. Keys are per region (apps/console/README.md, "Security"): an LB accepts
// its own region's keys and those of each region whose entrypoint it is, so a failover moves a
// region's clients to another LB without locking them out. It requires a key when its own region
// does: the LB cannot tell which region a keyless client came from.
import "server-only";
import { eq, isNull } from "drizzle-orm";
import type { ClientAuth } from "@meridian/protocol";
import type { LoadBalancerRow, Queryable } from "@meridian/db";

export async function clientAuthFor(
  { db, tables }: Queryable,
  lb: Pick<LoadBalancerRow, "id" | "regionId">,
  regionNames: Map<string, string>,
): Promise<ClientAuth> {
  const { clientKeys, entrypoints, regions } = tables;
  const served = new Set([lb.regionId, ...(await db.select().from(entrypoints).where(eq(entrypoints.lbId, lb.id))).map((e) => e.regionId)]);
  const keys = (await db.select().from(clientKeys).where(isNull(clientKeys.revokedAt)).orderBy(clientKeys.id))
    .filter((key) => served.has(key.regionId))
    .map((key) => ({ id: key.id, name: key.name, region: regionNames.get(key.regionId) ?? key.regionId, sha256: key.sha256 }));
  const [own] = await db.select({ required: regions.clientKeysRequired }).from(regions).where(eq(regions.id, lb.regionId)).limit(1);
  return { required: own?.required ?? false, keys };
}
