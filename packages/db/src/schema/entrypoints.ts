import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { loadBalancers } from "./load-balancers";
import { regions } from "./regions";

/** Which LB a region's clients send to. Failover moves it; failback moves it back. */
export const entrypoints = sqliteTable("entrypoints", {
  regionId: text("region_id")
    .primaryKey()
    .references(() => regions.id, { onDelete: "cascade" }),
  lbId: text("lb_id")
    .notNull()
    .references(() => loadBalancers.id, { onDelete: "cascade" }),
  updatedAt: integer("updated_at").notNull(),
});

export type EntrypointRow = typeof entrypoints.$inferSelect;
