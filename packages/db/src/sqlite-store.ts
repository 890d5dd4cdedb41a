// The Store of a SQLite database. better-sqlite3 has one connection, so a transaction is BEGIN …
// COMMIT on it with awaits in between, and any statement that runs on the connection meanwhile is
// part of that transaction. A write made outside every transaction (a lease renewal, an audit row,
// a session) while an operator's transaction was open used to join it and vanish with its ROLLBACK
// (a 409 or 412): the caller saw it succeed. So this store's own `db` takes its turn: an insert,
// update or delete made outside a transaction waits in the same queue as transactions and runs
// between them. Inside a transaction (the work's async context) it runs at once, as `tx.db` does:
// waiting there would wait for itself. So a transaction's work must not await a write that was
// started outside it: that write waits for the transaction, and the transaction for the write.
import { AsyncLocalStorage } from "node:async_hooks";
import { sql } from "drizzle-orm";
import type { Db } from "./client";
import type { Queryable, Store, StoreDb } from "./store";
import * as sqliteTables from "./schema/index";
import type * as pgTables from "./schema/pg";

/** Queue of one connection: transactions and lone writes, one at a time, in the order they came. */
class Turns {
  private tail: Promise<unknown> = Promise.resolve();
  private readonly inside = new AsyncLocalStorage<number>();
  private turns = 0;
  /** The turn running now; 0 between turns. */
  private current = 0;

  take<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(() => {
      const turn = ++this.turns;
      this.current = turn;
      return this.inside.run(turn, work).finally(() => {
        this.current = 0;
      });
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Whether the caller runs inside the turn running now (a transaction's work). Background work a
   * turn started (a timer, a promise not awaited) keeps that turn's number after the turn ended, so
   * it takes a turn of its own like any other write instead of joining the next transaction. */
  get held(): boolean {
    const turn = this.inside.getStore();
    return turn !== undefined && turn === this.current;
  }
}

const WRITES = new Set<PropertyKey>(["insert", "update", "delete"]);
const SETTLE = new Set<PropertyKey>(["then", "catch", "finally"]);

/** A write builder whose execution (awaiting it) takes a turn unless the caller already holds one. */
function queued<T extends object>(builder: T, turns: Turns): T {
  return new Proxy(builder, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (SETTLE.has(prop)) {
        // The builder itself is the thenable that runs the statement: resolve with it in our turn.
        const ran = () => (turns.held ? Promise.resolve(target) : turns.take(async () => await (target as PromiseLike<unknown>)));
        return (...args: unknown[]) => (ran() as unknown as Record<PropertyKey, (...a: unknown[]) => unknown>)[prop as string]!(...args);
      }
      return (...args: unknown[]) => {
        const next: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        return typeof next === "object" && next !== null ? queued(next, turns) : next;
      };
    },
  });
}

/** The Store of an open SQLite database (createDatabase builds it; exported for code that opened
 * the file itself with openDb). */
export function sqliteStore(db: Db): Store {
  const turns = new Turns();
  const tables = sqliteTables as unknown as typeof pgTables;
  const inTurn = db as unknown as StoreDb;
  const outside = new Proxy(inTurn, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (!WRITES.has(prop) || typeof value !== "function") return value;
      return (...args: unknown[]) => queued((value as (...a: unknown[]) => object).apply(target, args), turns);
    },
  });
  return {
    dialect: "sqlite",
    db: outside,
    tables,
    transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
      const tx: Queryable = { dialect: "sqlite", db: inTurn, tables };
      // better-sqlite3's own transaction() refuses async work, so BEGIN/COMMIT by hand, one at a time.
      // A deferred BEGIN, as better-sqlite3's transaction() uses: while another process holds the
      // write lock, the first write fails at once with SQLITE_BUSY (the console answers 503, retry),
      // whereas BEGIN IMMEDIATE would sit in the busy handler for busy_timeout, and better-sqlite3
      // waits synchronously: the whole console, reads included, would stall meanwhile.
      return turns.take(async () => {
        db.run(sql`BEGIN`);
        try {
          const result = await work(tx);
          db.run(sql`COMMIT`);
          return result;
        } catch (error) {
          db.run(sql`ROLLBACK`);
          throw error;
        }
      });
    },
  };
}
