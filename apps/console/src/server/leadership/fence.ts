// Fencing: a write that only the leader may make carries the term it leads under, and succeeds only
// while that term is still the lease's. A deposed leader that has not noticed yet (paused, cut off
// from the database longer than its lease) then changes nothing: its successor's term is higher.
// Use inside the WHERE of an UPDATE (and check `.returning()` for the rows it touched).
import "server-only";
import { type Column, type SQL, sql, type Table } from "drizzle-orm";
import { LEASE_NAME } from "./leader-elector";

/** `lease`: the console_leases table of the store the write goes to (SQLite's or PostgreSQL's). */
export function whileLeading(lease: Table & { term: Column; name: Column }, term: number): SQL {
  return sql`${term} = (select ${lease.term} from ${lease} where ${lease.name} = ${LEASE_NAME})`;
}
