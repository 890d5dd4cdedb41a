// Reads and writes of lb_tokens shared by the admin client (which token to present), the config
// builder (which peer credential hashes each LB may accept) and the token services. The scheme:
// docs/ARCHITECTURE.md, "LB credentials".
import "server-only";
import { and, eq } from "drizzle-orm";
import type { LbTokenRow, LbTokenState, Queryable } from "@meridian/db";
import { lbKeyId, peerCredentialHash } from "@meridian/protocol/credentials";

/** The token the console presents to the LB (its current one), or null when none was issued. */
export async function presentableToken({ db, tables }: Queryable, lbId: string): Promise<{ token: string; keyId: string } | null> {
  const { lbTokens } = tables;
  const [row] = await db
    .select()
    .from(lbTokens)
    .where(and(eq(lbTokens.lbId, lbId), eq(lbTokens.state, "current")))
    .limit(1);
  return row ? { token: row.token, keyId: row.keyId } : null;
}

export async function lbTokenRows({ db, tables }: Queryable, lbId: string): Promise<LbTokenRow[]> {
  return db.select().from(tables.lbTokens).where(eq(tables.lbTokens.lbId, lbId));
}

/** Per LB, the SHA-256 of the peer credential of each of its tokens (current, pending, retiring):
 * during a rotation its peers accept either. Sorted, so a config is the same for the same tokens. */
export async function peerCredentialHashes({ db, tables }: Queryable): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const row of await db.select().from(tables.lbTokens)) {
    const list = out.get(row.lbId) ?? [];
    list.push(peerCredentialHash(row.token));
    out.set(row.lbId, list);
  }
  for (const list of out.values()) list.sort();
  return out;
}

export async function insertToken({ db, tables }: Queryable, lbId: string, state: LbTokenState, token: string, now: number): Promise<{ keyId: string }> {
  const keyId = lbKeyId(token);
  await db.insert(tables.lbTokens).values({ lbId, state, keyId, token, createdAt: now });
  return { keyId };
}
