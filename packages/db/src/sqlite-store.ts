// The Store of a SQLite database. better-sqlite3 has one connection, so a transaction is BEGIN …
// COMMIT on it with awaits in between, and any statement that runs on the connection meanwhile is
// part of that transaction. A write made outside every transaction (a lease renewal, an audit row,
// a session) while an operator's transaction was open used to join it and vanish with its ROLLBACK
// (a 409 or 412): the caller saw it succeed. So this store's own `db` takes its turn: an insert,
// update or delete made outside a transaction waits in the same queue as transactions and runs
// between them. Inside a transaction (the work's async context) it runs at once, as `tx.db` does:
// waiting there would wait for itself. So a transaction's work must not await a write that was
// started outside it: that write waits for the transaction, and the transaction for the write.
//
// Another process holding the file's write lock: better-sqlite3 waits for it synchronously, event
// loop included, for the connection's busy_timeout, so that is only a moment (client.ts). A lone
// write or a transaction's BEGIN that SQLite refused with SQLITE_BUSY is made again after a
// growing pause (timers: requests, reads and the leader's own rounds go on meanwhile), in its
// turn, until the lock is free or `busyWaitMs` passed; then it fails with SQLITE_BUSY, saying so.
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

/** How long a write or a transaction waits, in total, for a lock another process holds. */
const SQLITE_BUSY_WAIT_MS = 5_000;
const FIRST_PAUSE_MS = 5;
const LONGEST_PAUSE_MS = 100;

/** SQLITE_BUSY (and its extended codes), also as the cause of drizzle's DrizzleQueryError. */
function isBusy(error: unknown): boolean {
  for (let current = error, depth = 0; current && typeof current === "object" && depth < 4; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") return code.startsWith("SQLITE_BUSY");
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** The lock stayed taken for the whole wait. Its `code` is SQLITE_BUSY, as the driver's error (its cause). */
class SqliteBusyError extends Error {
  readonly code = "SQLITE_BUSY";
  constructor(what: string, waitedMs: number, cause: unknown) {
    super(`the SQLite database stayed locked by another process for ${waitedMs} ms; ${what} was not made`, { cause });
    this.name = "SqliteBusyError";
  }
}

/** Runs `attempt`, again after a growing pause while SQLite answers SQLITE_BUSY, until `waitMs` after
 * `asked` (when the caller asked: a write queued behind others during a long lock gets no fresh
 * budget when its turn comes, or the k-th would fail only after k budgets). Only for work that
 * SQLite refused as a whole (a lone statement, a BEGIN): nothing of it was done. */
async function untilNotBusy<T>(attempt: () => T | Promise<T>, what: string, waitMs: number, asked: number): Promise<T> {
  const started = asked;
  for (let pause = FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, LONGEST_PAUSE_MS)) {
    try {
      return await attempt();
    } catch (error) {
      if (!isBusy(error)) throw error;
      const waited = performance.now() - started;
      if (waited + pause > waitMs) throw new SqliteBusyError(what, Math.round(waited), error);
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

const WRITES = new Set<PropertyKey>(["insert", "update", "delete"]);
const SETTLE = new Set<PropertyKey>(["then", "catch", "finally"]);

/** A write builder whose execution (awaiting it) takes a turn unless the caller already holds one. */
function queued<T extends object>(builder: T, turns: Turns, busyWaitMs: number): T {
  return new Proxy(builder, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (SETTLE.has(prop)) {
        // The builder itself is the thenable that runs the statement: resolve with it in our turn.
        // Outside a transaction a refused statement is made again (awaiting the builder runs it anew);
        // inside one it fails the transaction, as any error does.
        const ran = () => {
          if (turns.held) return Promise.resolve(target);
          const asked = performance.now();
          return turns.take(() => untilNotBusy(async () => await (target as PromiseLike<unknown>), "a write", busyWaitMs, asked));
        };
        return (...args: unknown[]) => (ran() as unknown as Record<PropertyKey, (...a: unknown[]) => unknown>)[prop as string]!(...args);
      }
      return (...args: unknown[]) => {
        const next: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        return typeof next === "object" && next !== null ? queued(next, turns, busyWaitMs) : next;
      };
    },
  });
}

export interface SqliteStoreOptions {
  /** How long a write or a transaction waits, in total, for a lock another process holds (default 5 s). */
  busyWaitMs?: number;
}

/** The Store of an open SQLite database (createDatabase builds it; exported for code that opened
 * the file itself with openDb). */
export function sqliteStore(db: Db, options: SqliteStoreOptions = {}): Store {
  const busyWaitMs = options.busyWaitMs ?? SQLITE_BUSY_WAIT_MS;
  const turns = new Turns();
  const tables = sqliteTables as unknown as typeof pgTables;
  const inTurn = db as unknown as StoreDb;
  const outside = new Proxy(inTurn, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (!WRITES.has(prop) || typeof value !== "function") return value;
      return (...args: unknown[]) => queued((value as (...a: unknown[]) => object).apply(target, args), turns, busyWaitMs);
    },
  });
  return {
    dialect: "sqlite",
    db: outside,
    tables,
    transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
      const tx: Queryable = { dialect: "sqlite", db: inTurn, tables };
      // better-sqlite3's own transaction() refuses async work, so BEGIN/COMMIT by hand, one at a time.
      // BEGIN IMMEDIATE takes the write lock before any of `work` runs: while another process holds
      // it, the BEGIN alone is refused (SQLITE_BUSY after the short busy_timeout) and made again
      // after a pause, without running `work` twice, and once it succeeded no statement of `work`
      // meets the lock. (A deferred BEGIN let the first write wait in the busy handler, which
      // better-sqlite3 does synchronously: the whole console stalled meanwhile.)
      const asked = performance.now();
      return turns.take(async () => {
        await untilNotBusy(() => db.run(sql`BEGIN IMMEDIATE`), "the transaction", busyWaitMs, asked);
        try {
          const result = await work(tx);
          db.run(sql`COMMIT`);
          return result;
        } catch (error) {
          // SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM… roll the transaction back by themselves: a
          // ROLLBACK then fails ("no transaction is active"), and must not replace the error that
          // says what happened.
          if (db.$client.inTransaction) {
            try {
              db.run(sql`ROLLBACK`);
            } catch {
              // The original error is the one to report.
            }
          }
          throw error;
        }
      });
    },
  };
}
