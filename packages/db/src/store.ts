// The query surface both stores share (SQLite and PostgreSQL), as types: code that must run on
// either takes a Queryable or a Store (database.ts builds them).
import type { NodePgDatabase } from "drizzle-orm/node-postgres";
import type pg from "pg";
import type * as pgTables from "./schema/pg";

export type PgDb = NodePgDatabase<typeof pgTables> & { $client: pg.Pool };

/** The query builders both drivers share (select, insert, update, delete, each awaited). Typed as
 * PostgreSQL's: its builders have no synchronous `.get()`/`.all()`/`.run()`, so code typed against
 * it cannot call what only SQLite has. A result of `update`/`delete` without `.returning()` differs
 * per driver (row count vs changes): use `.returning()` to learn what a write touched. */
export type StoreDb = Pick<PgDb, "select" | "insert" | "update" | "delete">;

/** What a query needs: the builders and the tables of one store, or of a transaction on it. Code
 * that runs on both stores takes a Queryable and its tables from `tables` (the dialect's tables,
 * with the same keys and row types), so one function serves a plain read and a step of a
 * transaction alike. */
export interface Queryable {
  readonly dialect: "sqlite" | "pg";
  readonly db: StoreDb;
  readonly tables: typeof pgTables;
}

export interface Store extends Queryable {
  /** Runs `work` in one transaction (rolled back when it throws); `tx` queries inside it. On SQLite,
   * transactions on the one connection are serialised, and a write through this store's own `db`
   * waits for the transaction in progress rather than joining it (sqlite-store.ts), so `work` must
   * not await a write of this store's `db` that was started outside it (each would wait for the other). */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
}
