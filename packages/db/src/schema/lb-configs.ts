import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { loadBalancers } from "./load-balancers";

/** Every LbConfig the console produced for an LB, by version; `acknowledgedAt` is set when the LB took it. */
export const lbConfigs = sqliteTable(
  "lb_configs",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    lbId: text("lb_id")
      .notNull()
      .references(() => loadBalancers.id, { onDelete: "cascade" }),
    version: integer("version").notNull(),
    json: text("json").notNull(),
    createdAt: integer("created_at").notNull(),
    acknowledgedAt: integer("acknowledged_at"),
  },
  (table) => [uniqueIndex("lb_configs_lb_version").on(table.lbId, table.version), index("lb_configs_lb").on(table.lbId)],
);

export type LbConfigRow = typeof lbConfigs.$inferSelect;
