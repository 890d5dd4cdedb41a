import { col, defineTable } from "./columns";

/** RTT between regions as the LBs measure it (LB region → replica region), smoothed. */
export const observedRttsTable = defineTable(
  "observed_rtts",
  {
    fromRegion: col.text("from_region").notNull(),
    toRegion: col.text("to_region").notNull(),
    rttMs: col.real("rtt_ms").notNull(),
    samples: col.int("samples").notNull().default(1),
    updatedAt: col.epochMs("updated_at").notNull(),
  },
  { primaryKey: ["fromRegion", "toRegion"] },
);
export const observedRtts = observedRttsTable.sqlite;

export type ObservedRttRow = typeof observedRtts.$inferSelect;
