// Reads and writes of lb_tokens shared by the admin client (which token to present), the config
// builder (which peer credential hashes each LB may accept) and the token services. The scheme:
// docs/ARCHITECTURE.md, "LB credentials".
import "server-only";
import { and, eq } from "drizzle-orm";
import { lbTokens, type Db, type LbTokenRow, type LbTokenState } from "@meridian/db";
import { lbKeyId, peerCredentialHash } from "@meridian/protocol/credentials";

/** The token the console presents to the LB (its current one), or null when none was issued. */
export function presentableToken(db: Pick<Db, "select">, lbId: string): { token: string; keyId: string } | null {
  const row = db
    .select()
    .from(lbTokens)
    .where(and(eq(lbTokens.lbId, lbId), eq(lbTokens.state, "current")))
    .get();
  return row ? { token: row.token, keyId: row.keyId } : null;
}

export function lbTokenRows(db: Pick<Db, "select">, lbId: string): LbTokenRow[] {
  return db.select().from(lbTokens).where(eq(lbTokens.lbId, lbId)).all();
}

/** Per LB, the SHA-256 of the peer credential of each of its tokens (current, pending, retiring):
 * during a rotation its peers accept either. Sorted, so a config is the same for the same tokens. */
export function peerCredentialHashes(db: Pick<Db, "select">): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const row of db.select().from(lbTokens).all()) {
    const list = out.get(row.lbId) ?? [];
    list.push(peerCredentialHash(row.token));
    out.set(row.lbId, list);
  }
  for (const list of out.values()) list.sort();
  return out;
}

export function insertToken(tx: Pick<Db, "insert">, lbId: string, state: LbTokenState, token: string, now: number): { keyId: string } {
  const keyId = lbKeyId(token);
  tx.insert(lbTokens).values({ lbId, state, keyId, token, createdAt: now }).run();
  return { keyId };
}
