import { col, defineTable } from "./columns";

/** Leadership of the console's background duties (apps/console/README.md, "Two consoles"). One row
 * per lease name. `term` is the fencing token: it grows by one each time the lease changes hands,
 * and writes that only the leader may make carry the term they were made under, so a deposed leader
 * (paused, partitioned) cannot publish after its successor took over. Times are the database
 * server's clock in epoch ms (databaseNowMs), the one clock every console reads alike. */
export const consoleLeasesTable = defineTable("console_leases", {
  name: col.text("name").primaryKey(),
  /** The console instance holding the lease ("" before anyone took it). */
  holder: col.text("holder").notNull(),
  /** Where operators reach the holder (its MERIDIAN_PUBLIC_URL or host:port), for the health endpoint and UI. */
  holderUrl: col.text("holder_url"),
  term: col.int("term").notNull().default(0),
  expiresAt: col.epochMs("expires_at").notNull(),
  renewedAt: col.epochMs("renewed_at").notNull(),
});
export const consoleLeases = consoleLeasesTable.sqlite;

export type ConsoleLeaseRow = typeof consoleLeases.$inferSelect;
