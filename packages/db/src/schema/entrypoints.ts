import { col, defineTable } from "./columns";
import { loadBalancersTable } from "./load-balancers";
import { regionsTable } from "./regions";

/** Which LB a region's clients send to. Failover moves it; failback moves it back. */
export const entrypointsTable = defineTable("entrypoints", {
  regionId: col
    .text("region_id")
    .primaryKey()
    .references(() => regionsTable, "id", { onDelete: "cascade" }),
  lbId: col
    .text("lb_id")
    .notNull()
    .references(() => loadBalancersTable, "id", { onDelete: "cascade" }),
  updatedAt: col.epochMs("updated_at").notNull(),
});
export const entrypoints = entrypointsTable.sqlite;

export type EntrypointRow = typeof entrypoints.$inferSelect;
