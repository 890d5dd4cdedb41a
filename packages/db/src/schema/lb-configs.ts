import { col, defineTable } from "./columns";
import { loadBalancersTable } from "./load-balancers";

/** Every LbConfig the console produced for an LB, by version; `acknowledgedAt` is set when the LB took it. */
export const lbConfigsTable = defineTable(
  "lb_configs",
  {
    id: col.id("id"),
    lbId: col
      .text("lb_id")
      .notNull()
      .references(() => loadBalancersTable, "id", { onDelete: "cascade" }),
    version: col.int("version").notNull(),
    json: col.text("json").notNull(),
    createdAt: col.epochMs("created_at").notNull(),
    acknowledgedAt: col.epochMs("acknowledged_at"),
    /** The leadership term (console_leases.term) this version was recorded under; 0 before leadership existed. */
    term: col.int("term").notNull().default(0),
  },
  {
    indexes: [
      { name: "lb_configs_lb_version", on: ["lbId", "version"], unique: true },
      { name: "lb_configs_lb", on: ["lbId"] },
    ],
  },
);
export const lbConfigs = lbConfigsTable.sqlite;

export type LbConfigRow = typeof lbConfigs.$inferSelect;
