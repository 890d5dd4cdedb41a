// SQL expressions the two dialects spell differently, written once in a form both read.
import { type SQL, type SQLWrapper, sql } from "drizzle-orm";

/** The larger of two values. SQLite's scalar max(a, b) is no function in PostgreSQL, and PostgreSQL's
 * greatest(a, b) none in SQLite; CASE WHEN is both. Put a column first: PostgreSQL types each
 * parameter from the column it is compared with. */
export function largerOf(a: SQLWrapper, b: SQLWrapper | number): SQL {
  return sql`case when ${a} >= ${b} then ${a} else ${b} end`;
}
