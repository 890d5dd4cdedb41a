import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Every mutation, by whom, with the target's state before and after (JSON, null when absent). */
export const auditLog = sqliteTable(
  "audit_log",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    at: integer("at").notNull(),
    actor: text("actor").notNull(),
    action: text("action").notNull(),
    target: text("target").notNull(),
    before: text("before"),
    after: text("after"),
  },
  (table) => [index("audit_log_at").on(table.at)],
);

export type AuditLogRow = typeof auditLog.$inferSelect;
