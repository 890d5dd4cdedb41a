// Console users come from env: "admin" (operator) with MERIDIAN_ADMIN_PASSWORD and "viewer"
// (read-only) with MERIDIAN_VIEWER_PASSWORD. At startup each is created or, when the password
// changed, re-hashed, and its sessions are ended. An unset admin password leaves the stored admin as
// it was; an unset viewer password disables a stored viewer (ensureUsers).
import "server-only";
import { eq } from "drizzle-orm";
import type { Queryable, UserRole, UserRow } from "@meridian/db";
import { hashPassword, isPasswordHash, verifyPassword } from "./password";

export interface SessionUser {
  id: number;
  username: string;
  role: UserRole;
}

/** The stored "hash" of a disabled user: not a scrypt hash, so no password verifies against it. */
const DISABLED = "disabled";

async function findUser({ db, tables }: Queryable, username: string): Promise<UserRow | undefined> {
  const [row] = await db.select().from(tables.users).where(eq(tables.users.username, username)).limit(1);
  return row;
}

async function ensureUser(q: Queryable, username: string, role: UserRole, password: string): Promise<void> {
  const { db, tables } = q;
  const { users } = tables;
  const now = Date.now();
  const existing = await findUser(q, username);
  if (!existing) {
    // Two consoles starting together on one PostgreSQL both find no user: the second insert is a no-op.
    await db
      .insert(users)
      .values({ username, role, passwordHash: await hashPassword(password), createdAt: now, updatedAt: now })
      .onConflictDoNothing({ target: users.username });
    return;
  }
  if (existing.role !== role || !(await verifyPassword(password, existing.passwordHash))) {
    await db
      .update(users)
      .set({ role, passwordHash: await hashPassword(password), updatedAt: now })
      .where(eq(users.id, existing.id));
    // A new password ends the sessions the old one opened: changing it is how an operator contains
    // a stolen password, and a session taken with it kept operator rights for its whole TTL.
    await db.delete(tables.sessions).where(eq(tables.sessions.userId, existing.id));
  }
}

/** Makes a stored user unable to log in and ends its sessions; the row stays (audit rows name it,
 * and a later start with a password enables it again through ensureUser). */
async function disableUser(q: Queryable, username: string): Promise<boolean> {
  const { db, tables } = q;
  const existing = await findUser(q, username);
  if (!existing || !isPasswordHash(existing.passwordHash)) return false;
  await db.update(tables.users).set({ passwordHash: DISABLED, updatedAt: Date.now() }).where(eq(tables.users.id, existing.id));
  await db.delete(tables.sessions).where(eq(tables.sessions.userId, existing.id));
  return true;
}

/** Resolves to what changed beyond creating or updating users: whether a stored viewer was disabled. */
export async function ensureUsers(
  q: Queryable,
  passwords: { adminPassword?: string | undefined; viewerPassword?: string | undefined },
): Promise<{ viewerDisabled: boolean }> {
  if (passwords.adminPassword) await ensureUser(q, "admin", "operator", passwords.adminPassword);
  if (passwords.viewerPassword) {
    await ensureUser(q, "viewer", "viewer", passwords.viewerPassword);
    return { viewerDisabled: false };
  }
  // Judgement: the viewer follows the configuration of this start. A console started without
  // MERIDIAN_VIEWER_PASSWORD has no viewer (as the README says), even when an earlier run, such as
  // the demo with its published password, created one: otherwise `MERIDIAN_DEMO=0 npm start` on the
  // demo's database kept a viewer anyone who read the README could log in as, and nothing short of
  // editing the database removed it. The admin is different: start.mjs always passes its password,
  // and a bare `next start` without one must not lock the operator out.
  return { viewerDisabled: await disableUser(q, "viewer") };
}

// Verifying against a dummy hash for unknown (or disabled) users keeps the response time the same,
// so timing does not reveal which usernames exist. Computed once, on first use.
let dummyHash: Promise<string> | undefined;

export interface CredentialCheck {
  /** The user, when the password is right. */
  user: SessionUser | null;
  /** Whether the username names a stored user (the refusal's audit row names only such users). */
  known: boolean;
}

export async function checkCredentials(q: Queryable, username: string, password: string): Promise<CredentialCheck> {
  const row = await findUser(q, username);
  dummyHash ??= hashPassword("meridian-dummy-password");
  const usable = row && isPasswordHash(row.passwordHash) ? row.passwordHash : await dummyHash;
  const ok = await verifyPassword(password, usable);
  return { user: row && ok && usable === row.passwordHash ? { id: row.id, username: row.username, role: row.role } : null, known: row !== undefined };
}

/** Whether a stored user has this name (for refusals that come before the password is checked). */
export async function isKnownUser(q: Queryable, username: string): Promise<boolean> {
  return (await findUser(q, username)) !== undefined;
}
