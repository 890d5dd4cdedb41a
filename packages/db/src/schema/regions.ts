import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** A region (e.g. us-ashburn). `id` is a stable slug; `name` is what LB configs and telemetry carry. */
export const regions = sqliteTable("regions", {
  id: text("id").primaryKey(),
  name: text("name").notNull().unique(),
  displayName: text("display_name"),
  createdAt: integer("created_at").notNull(),
});

export type RegionRow = typeof regions.$inferSelect;
