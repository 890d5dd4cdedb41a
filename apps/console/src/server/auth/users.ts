// Console users come from env: "admin" (operator) with MERIDIAN_ADMIN_PASSWORD and "viewer"
// (read-only) with MERIDIAN_VIEWER_PASSWORD. At startup each is created or, when the password
// changed, re-hashed, and its sessions are ended. An unset password leaves the stored user as it was.
import "server-only";
import { eq } from "drizzle-orm";
import type { Queryable, UserRole, UserRow } from "@meridian/db";
import { hashPassword, verifyPassword } from "./password";

export interface SessionUser {
  id: number;
  username: string;
  role: UserRole;
}

async function ensureUser({ db, tables }: Queryable, username: string, role: UserRole, password: string): Promise<void> {
  const { users } = tables;
  const now = Date.now();
  const [existing] = await db.select().from(users).where(eq(users.username, username)).limit(1);
  if (!existing) {
    // Two consoles starting together on one PostgreSQL both find no user: the second insert is a no-op.
    await db
      .insert(users)
      .values({ username, role, passwordHash: hashPassword(password), createdAt: now, updatedAt: now })
      .onConflictDoNothing({ target: users.username });
    return;
  }
  if (existing.role !== role || !verifyPassword(password, existing.passwordHash)) {
    await db
      .update(users)
      .set({ role, passwordHash: hashPassword(password), updatedAt: now })
      .where(eq(users.id, existing.id));
    // A new password ends the sessions the old one opened: changing it is how an operator contains
    // a stolen password, and a session taken with it kept operator rights for its whole TTL.
    await db.delete(tables.sessions).where(eq(tables.sessions.userId, existing.id));
  }
}

export async function ensureUsers(q: Queryable, passwords: { adminPassword?: string | undefined; viewerPassword?: string | undefined }): Promise<void> {
  if (passwords.adminPassword) await ensureUser(q, "admin", "operator", passwords.adminPassword);
  if (passwords.viewerPassword) await ensureUser(q, "viewer", "viewer", passwords.viewerPassword);
}

// Verifying against a dummy hash for unknown users keeps the response time the same, so timing does
// not reveal which usernames exist.
const DUMMY_HASH = hashPassword("meridian-dummy-password");

export async function checkCredentials({ db, tables }: Queryable, username: string, password: string): Promise<SessionUser | null> {
  const [row]: (UserRow | undefined)[] = await db.select().from(tables.users).where(eq(tables.users.username, username)).limit(1);
  const ok = verifyPassword(password, row?.passwordHash ?? DUMMY_HASH);
  return row && ok ? { id: row.id, username: row.username, role: row.role } : null;
}
