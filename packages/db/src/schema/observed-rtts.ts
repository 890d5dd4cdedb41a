import { integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** RTT between regions as the LBs measure it (LB region → replica region), smoothed. */
export const observedRtts = sqliteTable(
  "observed_rtts",
  {
    fromRegion: text("from_region").notNull(),
    toRegion: text("to_region").notNull(),
    rttMs: real("rtt_ms").notNull(),
    samples: integer("samples").notNull().default(1),
    updatedAt: integer("updated_at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.fromRegion, table.toRegion] })],
);

export type ObservedRttRow = typeof observedRtts.$inferSelect;
