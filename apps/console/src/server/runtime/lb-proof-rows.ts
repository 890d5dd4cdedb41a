// Which LBs have proved, at their current admin URL, that they hold a token the console issued
// (lb_proofs, written by the CredentialKeeper). Only those are listed as peers in LB configs and
// chosen as failover targets: a listener registered as an LB answers /health but never proves itself,
// and must receive neither peer polls nor a region's clients.
import "server-only";
import type { Queryable } from "@meridian/db";

export async function provenLbIds({ db, tables }: Queryable): Promise<Set<string>> {
  const provenAt = new Map((await db.select().from(tables.lbProofs)).map((p) => [p.lbId, p.adminBase]));
  return new Set((await db.select().from(tables.loadBalancers)).filter((lb) => provenAt.get(lb.id) === (lb.adminUrl ?? lb.url)).map((lb) => lb.id));
}
