import { col, defineTable } from "./columns";

/** Every mutation, by whom, with the target's state before and after (JSON, null when absent). */
export const auditLogTable = defineTable(
  "audit_log",
  {
    id: col.id("id"),
    at: col.epochMs("at").notNull(),
    actor: col.text("actor").notNull(),
    action: col.text("action").notNull(),
    target: col.text("target").notNull(),
    before: col.text("before"),
    after: col.text("after"),
  },
  { indexes: [{ name: "audit_log_at", on: ["at"] }] },
);
export const auditLog = auditLogTable.sqlite;

export type AuditLogRow = typeof auditLog.$inferSelect;
