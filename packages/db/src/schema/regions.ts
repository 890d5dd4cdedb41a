import { col, defineTable } from "./columns";

/** A region (e.g. us-ashburn). `id` is a stable slug; `name` is what LB configs and telemetry carry. */
export const regionsTable = defineTable("regions", {
  id: col.text("id").primaryKey(),
  name: col.text("name").notNull().unique(),
  displayName: col.text("display_name"),
  /** The region's LBs refuse inference requests without one of its client API keys (client-keys.ts);
   * off: keys are still recognised and counted, and keyless clients are served. */
  clientKeysRequired: col.bool("client_keys_required").notNull().default(false),
  createdAt: col.epochMs("created_at").notNull(),
});
export const regions = regionsTable.sqlite;

export type RegionRow = typeof regions.$inferSelect;
