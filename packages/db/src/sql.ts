// SQL expressions the two dialects spell differently, written once in a form both read.
import { type SQL, type SQLWrapper, sql } from "drizzle-orm";

/** The larger of two values. SQLite's scalar max(a, b) is no function in PostgreSQL, and PostgreSQL's
 * greatest(a, b) none in SQLite; CASE WHEN is both. Put a column first: PostgreSQL types each
 * parameter from the column it is compared with. */
export function largerOf(a: SQLWrapper, b: SQLWrapper | number): SQL {
  return sql`case when ${a} >= ${b} then ${a} else ${b} end`;
}

/**
 * The database server's clock, in epoch milliseconds. A lease that several consoles write and judge
 * reads one clock this way, so their own clocks need not agree. No expression reads in both dialects:
 * SQLite has julianday('now'), PostgreSQL clock_timestamp().
 */
export function databaseNowMs(dialect: "sqlite" | "pg"): SQL {
  return dialect === "pg"
    ? sql`cast(floor(extract(epoch from clock_timestamp()) * 1000) as bigint)`
    : sql`cast((julianday('now') - 2440587.5) * 86400000 as integer)`;
}
