import { col, defineTable } from "./columns";
import { usersTable } from "./users";

/** Login sessions. The cookie carries a random token; only its SHA-256 is stored, so a leaked
 * database does not leak live sessions. */
export const sessionsTable = defineTable(
  "sessions",
  {
    tokenHash: col.text("token_hash").primaryKey(),
    userId: col
      .int("user_id")
      .notNull()
      .references(() => usersTable, "id", { onDelete: "cascade" }),
    createdAt: col.epochMs("created_at").notNull(),
    expiresAt: col.epochMs("expires_at").notNull(),
  },
  { indexes: [{ name: "sessions_user", on: ["userId"] }] },
);
export const sessions = sessionsTable.sqlite;

export type SessionRow = typeof sessions.$inferSelect;
