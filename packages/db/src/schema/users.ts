import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

export const USER_ROLES = ["operator", "viewer"] as const;
export type UserRole = (typeof USER_ROLES)[number];

/** Console users. `passwordHash` is `scrypt$N$r$p$salt$hash` (base64), never the password. */
export const users = sqliteTable("users", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  username: text("username").notNull().unique(),
  role: text("role", { enum: USER_ROLES }).notNull(),
  passwordHash: text("password_hash").notNull(),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

export type UserRow = typeof users.$inferSelect;
