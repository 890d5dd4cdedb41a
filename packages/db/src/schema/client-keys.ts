import { col, defineTable } from "./columns";
import { regionsTable } from "./regions";

/** Client API keys, per region. The key is shown once at creation and never stored: `sha256` is
 * what the console pushes to the region's LBs (and checks /api/entrypoints against). A revoked key
 * keeps its row (who revoked it, when) but leaves every LB config. */
export const clientKeysTable = defineTable(
  "client_keys",
  {
    /** The public half of `mk_<id>_<secret>`: 12 hex characters, also the metrics label. */
    id: col.text("id").primaryKey(),
    regionId: col
      .text("region_id")
      .notNull()
      .references(() => regionsTable, "id", { onDelete: "cascade" }),
    name: col.text("name").notNull(),
    /** Hex SHA-256 of the whole key. */
    sha256: col.text("sha256").notNull(),
    createdAt: col.epochMs("created_at").notNull(),
    createdBy: col.text("created_by").notNull(),
    revokedAt: col.epochMs("revoked_at"),
    revokedBy: col.text("revoked_by"),
  },
  { indexes: [{ name: "client_keys_region", on: ["regionId"] }] },
);
export const clientKeys = clientKeysTable.sqlite;

export type ClientKeyRow = typeof clientKeys.$inferSelect;
