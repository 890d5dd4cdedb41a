import { ENGINE_KINDS, REPLICA_STATES } from "@meridian/routing/types";
import { col, defineTable } from "./columns";
import { loadBalancersTable } from "./load-balancers";
import { regionsTable } from "./regions";

/** An inference-engine replica. `homeLbId` is the LB it belongs to; during a failover
 * `rehomedToLbId` names the LB that serves it as local until failback. */
export const replicasTable = defineTable("replicas", {
  id: col.text("id").primaryKey(),
  name: col.text("name").notNull().unique(),
  url: col.text("url").notNull(),
  regionId: col
    .text("region_id")
    .notNull()
    .references(() => regionsTable, "id"),
  engine: col.text("engine", { enum: ENGINE_KINDS }).notNull().default("sglang"),
  model: col.text("model").notNull(),
  state: col.text("state", { enum: REPLICA_STATES }).notNull().default("enabled"),
  homeLbId: col.text("home_lb_id").references(() => loadBalancersTable, "id", { onDelete: "set null" }),
  rehomedToLbId: col.text("rehomed_to_lb_id").references(() => loadBalancersTable, "id", { onDelete: "set null" }),
  /** Requests an LB may have in flight on the replica (ReplicaConfig.maxConcurrency); null = the LB
   * learns it from the engine. */
  maxConcurrency: col.int("max_concurrency"),
  /** KV tokens the engine's prefix cache holds (ReplicaConfig.cacheCapacityTokens); null = the LB
   * reads it from the engine's metrics. */
  cacheCapacityTokens: col.int("cache_capacity_tokens"),
  createdAt: col.epochMs("created_at").notNull(),
});
export const replicas = replicasTable.sqlite;

export type ReplicaRow = typeof replicas.$inferSelect;
