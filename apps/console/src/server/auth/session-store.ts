// Sessions: the cookie carries 32 random bytes (base64url); the table keeps their SHA-256, so a
// copy of the database cannot be replayed as a live session. Sessions live in the database (SQLite or
// PostgreSQL), so with several consoles on one PostgreSQL any console answers a session another made.
import "server-only";
import { createHash, randomBytes } from "node:crypto";
import { eq, lt } from "drizzle-orm";
import type { Queryable } from "@meridian/db";
import type { SessionUser } from "./users";

export const SESSION_COOKIE = "meridian_session";

const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");

export async function createSession(
  { db, tables }: Queryable,
  userId: number,
  ttlMs: number,
  now: number = Date.now(),
): Promise<{ token: string; expiresAt: number }> {
  const { sessions } = tables;
  const token = randomBytes(32).toString("base64url");
  const expiresAt = now + ttlMs;
  // Expired sessions are garbage; sweeping them at login keeps the table small. The sweep and the
  // insert need not be one transaction: each is correct on its own.
  await db.delete(sessions).where(lt(sessions.expiresAt, now));
  await db.insert(sessions).values({ tokenHash: hashToken(token), userId, createdAt: now, expiresAt });
  return { token, expiresAt };
}

export async function resolveSession({ db, tables }: Queryable, token: string | undefined | null, now: number = Date.now()): Promise<SessionUser | null> {
  if (!token || token.length > 200) return null;
  const { sessions, users } = tables;
  const [row] = await db
    .select({ expiresAt: sessions.expiresAt, id: users.id, username: users.username, role: users.role })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(eq(sessions.tokenHash, hashToken(token)))
    .limit(1);
  if (!row) return null;
  if (row.expiresAt <= now) {
    await db.delete(sessions).where(eq(sessions.tokenHash, hashToken(token)));
    return null;
  }
  return { id: row.id, username: row.username, role: row.role };
}

export async function deleteSession({ db, tables }: Queryable, token: string | undefined | null): Promise<void> {
  if (!token) return;
  await db.delete(tables.sessions).where(eq(tables.sessions.tokenHash, hashToken(token)));
}

/** The session token from a Cookie header; null when there is none or it is malformed. Our tokens
 * are base64url, which needs no decoding; a value that does not decode ("%zz%") cannot be one, and
 * is no session rather than a server error. */
export function tokenFromCookieHeader(header: string | null): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name !== SESSION_COOKIE) continue;
    try {
      return decodeURIComponent(rest.join("="));
    } catch {
      return null;
    }
  }
  return null;
}

export function sessionCookie(token: string, expiresAt: number, secure: boolean): string {
  const maxAge = Math.max(0, Math.floor((expiresAt - Date.now()) / 1000));
  return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secure ? "; Secure" : ""}`;
}

export function clearedSessionCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${secure ? "; Secure" : ""}`;
}
