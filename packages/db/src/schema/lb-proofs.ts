import { col, defineTable } from "./columns";
import { loadBalancersTable } from "./load-balancers";

/** Where each LB last proved it holds one of its tokens (GET /admin/proof answered with a valid
 * HMAC). Only an LB proven at its current admin URL is listed as a peer in other LBs' configs, so a
 * listener registered as an LB that never proves itself is polled by no LB. */
export const lbProofsTable = defineTable("lb_proofs", {
  lbId: col
    .text("lb_id")
    .primaryKey()
    .references(() => loadBalancersTable, "id", { onDelete: "cascade" }),
  adminBase: col.text("admin_base").notNull(),
  keyId: col.text("key_id").notNull(),
  provenAt: col.epochMs("proven_at").notNull(),
});
export const lbProofs = lbProofsTable.sqlite;

export type LbProofRow = typeof lbProofs.$inferSelect;
