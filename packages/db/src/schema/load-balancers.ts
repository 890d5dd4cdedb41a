import { integer, real, sqliteTable, text, type AnySQLiteColumn } from "drizzle-orm/sqlite-core";
import { CROSS_REGION_MODES, DEFAULT_WEIGHTS } from "@meridian/routing/types";
import { regions } from "./regions";

export const LB_STATES = ["healthy", "failed", "failed-over"] as const;
export type LbStateName = (typeof LB_STATES)[number];

/** A regional load balancer (a meridian-proxy process). Its live health lives in the console's memory;
 * `state` is the operator-visible lifecycle that survives restarts (failed over or not). */
export const loadBalancers = sqliteTable("load_balancers", {
  id: text("id").primaryKey(),
  name: text("name").notNull().unique(),
  /** Where clients send traffic. */
  url: text("url").notNull(),
  /** Where the console reaches /admin/*; null = same as `url`. */
  adminUrl: text("admin_url"),
  regionId: text("region_id")
    .notNull()
    .references(() => regions.id),
  state: text("state", { enum: LB_STATES }).notNull().default("healthy"),
  policy: text("policy").notNull().default("gorgo"),
  crossRegion: text("cross_region", { enum: CROSS_REGION_MODES }).notNull().default("direct"),
  weightRtt: real("weight_rtt").notNull().default(DEFAULT_WEIGHTS.rtt),
  weightQueue: real("weight_queue").notNull().default(DEFAULT_WEIGHTS.queue),
  /** The tuner trial this LB splits its sessions by (LbConfig.trial as JSON); null outside a trial.
   * Kept on the row so every config version, whatever triggered it, carries the running trial. */
  trialJson: text("trial_json"),
  /** Latest config version the console wants this LB to run (lb_configs holds the history). */
  configVersion: integer("config_version").notNull().default(0),
  /** Latest version the LB acknowledged (PUT /admin/config answered 2xx). */
  ackedVersion: integer("acked_version").notNull().default(0),
  /** Set while failed over: the LB that took over this LB's replicas and entrypoint. */
  failedOverTo: text("failed_over_to").references((): AnySQLiteColumn => loadBalancers.id, { onDelete: "set null" }),
  /** Set while failed over by the health monitor (not by an operator): only such a failover is
   * failed back automatically once the LB stays healthy (apps/console/src/server/runtime/auto-failback.ts). */
  failedOverAutomatically: integer("failed_over_automatically", { mode: "boolean" }).notNull().default(false),
  createdAt: integer("created_at").notNull(),
});

export type LoadBalancerRow = typeof loadBalancers.$inferSelect;
