import { col, defineTable } from "./columns";

export const USER_ROLES = ["operator", "viewer"] as const;
export type UserRole = (typeof USER_ROLES)[number];

/** Console users. `passwordHash` is `scrypt$N$r$p$salt$hash` (base64), never the password. */
export const usersTable = defineTable("users", {
  id: col.id("id"),
  username: col.text("username").notNull().unique(),
  role: col.text("role", { enum: USER_ROLES }).notNull(),
  passwordHash: col.text("password_hash").notNull(),
  createdAt: col.epochMs("created_at").notNull(),
  updatedAt: col.epochMs("updated_at").notNull(),
});
export const users = usersTable.sqlite;

export type UserRow = typeof users.$inferSelect;
