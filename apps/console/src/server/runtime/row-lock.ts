// Read-modify-write on PostgreSQL (read committed): two transactions that read the same row before
// either writes both decide from the old value, and the later write undoes the earlier one. Reading
// the row FOR (NO KEY) UPDATE makes the second wait for the first's commit and then read what it wrote.
// SQLite serialises write transactions already, and its builders have no FOR UPDATE.
import "server-only";
import type { Queryable } from "@meridian/db";

/** `query` (a select of the rows about to be changed) with FOR NO KEY UPDATE on PostgreSQL: the rows
 * stay locked until the transaction ends against other lockers, updates and deletes, and a
 * transaction that locked them first has committed. Not FOR UPDATE: that also blocks the
 * foreign-key checks of rows that reference them (a replica homed on a locked LB, an entrypoint
 * handed to it), and a transaction holding the LB while it waits for a row such an insert's
 * transaction holds deadlocked with it (review r39/4). No key of these tables is ever updated. */
export function forUpdate<Q extends PromiseLike<unknown> & { for(strength: "no key update"): PromiseLike<unknown> }>(
  tx: Pick<Queryable, "dialect">,
  query: Q,
): PromiseLike<Awaited<Q>> {
  return (tx.dialect === "pg" ? query.for("no key update") : query) as PromiseLike<Awaited<Q>>;
}
