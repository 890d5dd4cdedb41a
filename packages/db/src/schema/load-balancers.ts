import { CROSS_REGION_MODES, DEFAULT_WEIGHTS } from "@meridian/routing/types";
import { type AnyTablePair, col, defineTable } from "./columns";
import { regionsTable } from "./regions";

export const LB_STATES = ["healthy", "failed", "failed-over"] as const;
export type LbStateName = (typeof LB_STATES)[number];

/** A regional load balancer (a meridian-proxy process). Its live health lives in the console's memory;
 * `state` is the operator-visible lifecycle that survives restarts (failed over or not). */
export const loadBalancersTable = defineTable("load_balancers", {
  id: col.text("id").primaryKey(),
  name: col.text("name").notNull().unique(),
  /** Where clients send traffic. */
  url: col.text("url").notNull(),
  /** Where the console reaches /admin/*; null = same as `url`. */
  adminUrl: col.text("admin_url"),
  regionId: col
    .text("region_id")
    .notNull()
    .references(() => regionsTable, "id"),
  state: col.text("state", { enum: LB_STATES }).notNull().default("healthy"),
  policy: col.text("policy").notNull().default("gorgo"),
  crossRegion: col.text("cross_region", { enum: CROSS_REGION_MODES }).notNull().default("direct"),
  weightRtt: col.real("weight_rtt").notNull().default(DEFAULT_WEIGHTS.rtt),
  weightQueue: col.real("weight_queue").notNull().default(DEFAULT_WEIGHTS.queue),
  /** The tuner trial this LB splits its sessions by (LbConfig.trial as JSON); null outside a trial.
   * Kept on the row so every config version, whatever triggered it, carries the running trial. */
  trialJson: col.text("trial_json"),
  /** The LB's request limits (LbConfig.limits) the operator set, as JSON holding only the fields set:
   * a missing field, or null for the whole, is the protocol's default (DEFAULT_LIMITS). Null also
   * means "not adopted yet": the console takes the limits the LB reports running once
   * (apps/console/src/server/runtime/lb-settings-adoption.ts) rather than replacing them. */
  limitsJson: col.text("limits_json"),
  /** The LB's routing settings (LbConfig.probes, .index, .sessionKeyBlocks) as JSON holding only the
   * fields set, as limitsJson does, the rest at the protocol's defaults. A column of its own: an
   * operator replaces the limits and these separately. Adopted from the LB with the limits, once
   * (limitsJson null is the "not adopted yet" mark for both); an operator's value is never replaced.
   * Null: none stored (an LB adopted before this column existed runs the defaults the console pushed). */
  routingSettingsJson: col.text("routing_settings_json"),
  /** Latest config version the console wants this LB to run (lb_configs holds the history). */
  configVersion: col.int("config_version").notNull().default(0),
  /** Latest version the LB acknowledged (PUT /admin/config answered 2xx). */
  ackedVersion: col.int("acked_version").notNull().default(0),
  /** Set while failed over: the LB that took over this LB's replicas and entrypoint. */
  failedOverTo: col.text("failed_over_to").references((): AnyTablePair => loadBalancersTable, "id", { onDelete: "set null" }),
  /** Set while failed over by the health monitor (not by an operator): only such a failover is
   * failed back automatically once the LB stays healthy (apps/console/src/server/runtime/auto-failback.ts). */
  failedOverAutomatically: col.bool("failed_over_automatically").notNull().default(false),
  /** Set while failed over: whether the failover moved this LB's own region's entrypoint (it was the
   * region's entrypoint then), so that failback moves it back and only then. Null: failed over
   * before this column existed, when failback always took the entrypoint back. */
  failedOverEntrypoint: col.bool("failed_over_entrypoint"),
  createdAt: col.epochMs("created_at").notNull(),
});
export const loadBalancers = loadBalancersTable.sqlite;

export type LoadBalancerRow = typeof loadBalancers.$inferSelect;
