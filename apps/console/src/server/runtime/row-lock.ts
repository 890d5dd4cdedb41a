// Read-modify-write on PostgreSQL (read committed): two transactions that read the same row before
// either writes both decide from the old value, and the later write undoes the earlier one. Reading
// the row FOR UPDATE makes the second wait for the first's commit and then read what it wrote.
// SQLite serialises write transactions already, and its builders have no FOR UPDATE.
import "server-only";
import type { Queryable } from "@meridian/db";

/** `query` (a select of the rows about to be changed) with FOR UPDATE on PostgreSQL: the rows stay
 * locked until the transaction ends, and a transaction that locked them first has committed. */
export function forUpdate<Q extends PromiseLike<unknown> & { for(strength: "update"): PromiseLike<unknown> }>(
  tx: Pick<Queryable, "dialect">,
  query: Q,
): PromiseLike<Awaited<Q>> {
  return (tx.dialect === "pg" ? query.for("update") : query) as PromiseLike<Awaited<Q>>;
}
