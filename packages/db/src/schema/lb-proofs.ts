import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { loadBalancers } from "./load-balancers";

/** Where each LB last proved it holds one of its tokens (GET /admin/proof answered with a valid
 * HMAC). Only an LB proven at its current admin URL is listed as a peer in other LBs' configs, so a
 * listener registered as an LB that never proves itself is polled by no LB. */
export const lbProofs = sqliteTable("lb_proofs", {
  lbId: text("lb_id")
    .primaryKey()
    .references(() => loadBalancers.id, { onDelete: "cascade" }),
  adminBase: text("admin_base").notNull(),
  keyId: text("key_id").notNull(),
  provenAt: integer("proven_at").notNull(),
});

export type LbProofRow = typeof lbProofs.$inferSelect;
