// Race tests on PostgreSQL (read committed): a service's transactions with one kind of write held
// until the test releases it, the interleaving that a slow round trip or a second console gives.
// SQLite serialises write transactions, so these races exist on PostgreSQL only.
import "server-only";
import { type SQL, sql } from "drizzle-orm";
import type { Database, Queryable, Store } from "@meridian/db";

export interface HeldWrites {
  /** The store to hand the service under test (e.g. `Object.create(rt, { store: { value } })`). */
  store: Store;
  /** Resolves when the service reaches its first held write (everything it read before is read),
   * with the PostgreSQL backend of its transaction, whose locks it holds until released. */
  reached: Promise<{ backendPid: number }>;
  /** Lets every held write go on. */
  release(): void;
}

/** `store` with every `insert`, `update` or `delete` of its transactions held when it is awaited,
 * whatever its builder chain (`.set(…).where(…)`, `.values(…).returning()`). */
export function holdWrites(store: Store, method: "insert" | "update" | "delete"): HeldWrites {
  let reachedNow!: (at: { backendPid: number }) => void;
  const reached = new Promise<{ backendPid: number }>((resolve) => (reachedNow = resolve));
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const held: Store = {
    ...store,
    transaction: (work) =>
      store.transaction((tx) => {
        const driver = tx.db as unknown as { execute(query: SQL): Promise<{ rows: Array<{ pid: number }> }> };
        // The transaction's own backend (its connection), so that a test can tell a wait for its
        // locks from a wait for anyone else's (the console's background rounds).
        const hold = async (): Promise<void> => {
          const { rows } = await driver.execute(sql`select pg_backend_pid() as pid`);
          reachedNow({ backendPid: rows[0]!.pid });
          await gate;
        };
        // Each step of the builder chain is wrapped; awaiting any of them first waits at the gate.
        const gated = (builder: object): unknown =>
          new Proxy(builder, {
            get(target, prop) {
              const value = Reflect.get(target, prop, target);
              if (prop === "then") {
                return (ok: (v: unknown) => unknown, fail: (e: unknown) => unknown) =>
                  hold().then(() => (value as (a: unknown, b: unknown) => unknown).call(target, ok, fail), fail);
              }
              if (typeof value !== "function") return value;
              return (...args: unknown[]) => {
                const next = (value as (...a: unknown[]) => unknown).apply(target, args);
                return next !== null && typeof next === "object" ? gated(next) : next;
              };
            },
          });
        const db = new Proxy(tx.db, {
          get(target, prop) {
            const value = Reflect.get(target, prop, target);
            if (prop !== method) return typeof value === "function" ? value.bind(target) : value;
            return (...args: unknown[]) => gated((value as (...a: unknown[]) => object).apply(target, args));
          },
        });
        return work({ ...tx, db } as Queryable);
      }),
  };
  return { store: held, reached, release };
}

/** Statements that wait, directly or behind another waiter, for a lock the transaction of backend
 * `blockerPid` holds (PostgreSQL), of those whose text is like `like` (an SQL LIKE pattern,
 * case-insensitive). The console's own background rounds (config records, probes) wait for the same
 * rows and may stand in the queue between the two, so a direct wait alone would miss the statement
 * under test, and any wait at all could be theirs. */
export async function waitingFor(database: Database, blockerPid: number, like = "%"): Promise<number> {
  if (database.dialect !== "pg") throw new Error("lock waits are PostgreSQL's");
  const { rows } = await database.db.$client.query<{ pid: number; blockers: number[]; matches: boolean }>(
    "select pid, pg_blocking_pids(pid) as blockers, query ilike $1 as matches from pg_stat_activity where datname = current_database()",
    [like],
  );
  const byPid = new Map(rows.map((row) => [row.pid, row]));
  const waitsOnBlocker = (pid: number, seen: Set<number>): boolean =>
    (byPid.get(pid)?.blockers ?? []).some((b) => b === blockerPid || (!seen.has(b) && waitsOnBlocker(b, seen.add(b))));
  return rows.filter((row) => row.matches && waitsOnBlocker(row.pid, new Set([row.pid]))).length;
}
