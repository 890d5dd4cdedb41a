// Console users come from env: "admin" (operator) with MERIDIAN_ADMIN_PASSWORD and "viewer"
// (read-only) with MERIDIAN_VIEWER_PASSWORD. At startup each is created or, when the password
// changed, re-hashed. An unset password leaves the stored user as it was.
import "server-only";
import { eq } from "drizzle-orm";
import { users, type Db, type UserRole, type UserRow } from "@meridian/db";
import { hashPassword, verifyPassword } from "./password";

export interface SessionUser {
  id: number;
  username: string;
  role: UserRole;
}

function ensureUser(db: Db, username: string, role: UserRole, password: string): void {
  const now = Date.now();
  const existing = db.select().from(users).where(eq(users.username, username)).get();
  if (!existing) {
    db.insert(users)
      .values({ username, role, passwordHash: hashPassword(password), createdAt: now, updatedAt: now })
      .run();
    return;
  }
  if (existing.role !== role || !verifyPassword(password, existing.passwordHash)) {
    db.update(users)
      .set({ role, passwordHash: hashPassword(password), updatedAt: now })
      .where(eq(users.id, existing.id))
      .run();
  }
}

export function ensureUsers(db: Db, passwords: { adminPassword?: string | undefined; viewerPassword?: string | undefined }): void {
  if (passwords.adminPassword) ensureUser(db, "admin", "operator", passwords.adminPassword);
  if (passwords.viewerPassword) ensureUser(db, "viewer", "viewer", passwords.viewerPassword);
}

// Verifying against a dummy hash for unknown users keeps the response time the same, so timing does
// not reveal which usernames exist.
const DUMMY_HASH = hashPassword("meridian-dummy-password");

export function checkCredentials(db: Db, username: string, password: string): SessionUser | null {
  const row: UserRow | undefined = db.select().from(users).where(eq(users.username, username)).get();
  const ok = verifyPassword(password, row?.passwordHash ?? DUMMY_HASH);
  return row && ok ? { id: row.id, username: row.username, role: row.role } : null;
}
