import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { ENGINE_KINDS, REPLICA_STATES } from "@meridian/routing/types";
import { loadBalancers } from "./load-balancers";
import { regions } from "./regions";

/** An inference-engine replica. `homeLbId` is the LB it belongs to; during a failover
 * `rehomedToLbId` names the LB that serves it as local until failback. */
export const replicas = sqliteTable("replicas", {
  id: text("id").primaryKey(),
  name: text("name").notNull().unique(),
  url: text("url").notNull(),
  regionId: text("region_id")
    .notNull()
    .references(() => regions.id),
  engine: text("engine", { enum: ENGINE_KINDS }).notNull().default("sglang"),
  model: text("model").notNull(),
  state: text("state", { enum: REPLICA_STATES }).notNull().default("enabled"),
  homeLbId: text("home_lb_id").references(() => loadBalancers.id, { onDelete: "set null" }),
  rehomedToLbId: text("rehomed_to_lb_id").references(() => loadBalancers.id, { onDelete: "set null" }),
  createdAt: integer("created_at").notNull(),
});

export type ReplicaRow = typeof replicas.$inferSelect;
