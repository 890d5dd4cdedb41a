import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** A region (e.g. us-ashburn). `id` is a stable slug; `name` is what LB configs and telemetry carry. */
export const regions = sqliteTable("regions", {
  id: text("id").primaryKey(),
  name: text("name").notNull().unique(),
  displayName: text("display_name"),
  /** The region's LBs refuse inference requests without one of its client API keys (client-keys.ts);
   * off: keys are still recognised and counted, and keyless clients are served. */
  clientKeysRequired: integer("client_keys_required", { mode: "boolean" }).notNull().default(false),
  createdAt: integer("created_at").notNull(),
});

export type RegionRow = typeof regions.$inferSelect;
