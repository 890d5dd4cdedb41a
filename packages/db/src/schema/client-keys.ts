import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { regions } from "./regions";

/** Client API keys, per region. The key is shown once at creation and never stored: `sha256` is
 * what the console pushes to the region's LBs (and checks /api/entrypoints against). A revoked key
 * keeps its row (who revoked it, when) but leaves every LB config. */
export const clientKeys = sqliteTable(
  "client_keys",
  {
    /** The public half of `mk_<id>_<secret>`: 12 hex characters, also the metrics label. */
    id: text("id").primaryKey(),
    regionId: text("region_id")
      .notNull()
      .references(() => regions.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    /** Hex SHA-256 of the whole key. */
    sha256: text("sha256").notNull(),
    createdAt: integer("created_at").notNull(),
    createdBy: text("created_by").notNull(),
    revokedAt: integer("revoked_at"),
    revokedBy: text("revoked_by"),
  },
  (table) => [index("client_keys_region").on(table.regionId)],
);

export type ClientKeyRow = typeof clientKeys.$inferSelect;
