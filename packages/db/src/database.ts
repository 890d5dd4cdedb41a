// createDatabase: the console's store, chosen by DATABASE_URL. A postgres:// (or postgresql://) URL
// opens a node-postgres pool; anything else is better-sqlite3 on the SQLite file, as before.
// Both come with the same tables (src/schema/columns.ts builds both dialects from one declaration)
// and with a `store`: the query surface both drivers share, for code that must run on either.
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import { migrate as migratePg } from "drizzle-orm/node-postgres/migrator";
import pg from "pg";
import { migrate as migrateSqlite, migrationsFolder, openDb, type Db } from "./client";
import { sqliteStore } from "./sqlite-store";
import type { PgDb, Store } from "./store";
import * as pgTables from "./schema/pg";

export type { PgDb, Queryable, Store, StoreDb } from "./store";

interface DatabaseBase {
  readonly store: Store;
  /** Where the data lives, for logs: the SQLite path or the PostgreSQL URL without its password. */
  readonly location: string;
  /** Applies every pending committed migration of this dialect (idempotent; on PostgreSQL two
   * consoles starting together take turns through an advisory lock). */
  migrate(): Promise<void>;
  close(): Promise<void>;
}
export interface SqliteDatabase extends DatabaseBase {
  readonly dialect: "sqlite";
  readonly db: Db;
}
export interface PostgresDatabase extends DatabaseBase {
  readonly dialect: "pg";
  readonly db: PgDb;
}
export type Database = SqliteDatabase | PostgresDatabase;

export interface DatabaseSettings {
  /** postgres://user:password@host:port/db; unset or empty: SQLite at `sqlitePath`. */
  DATABASE_URL?: string | undefined;
  sqlitePath: string;
  /** Called with errors of idle PostgreSQL connections (a restarted server), which would otherwise crash the process. */
  onPoolError?: (error: Error) => void;
  /** PostgreSQL: how long one statement may wait for its answer (default PG_QUERY_TIMEOUT_MS). Keep
   * it below the leader lease's TTL (apps/console leadership): a lease round waits for at most one
   * statement that gets no answer. */
  queryTimeoutMs?: number;
}

export function isPostgresUrl(url: string | undefined): url is string {
  return url !== undefined && /^postgres(ql)?:\/\//.test(url);
}

export function createDatabase(settings: DatabaseSettings): Database {
  if (isPostgresUrl(settings.DATABASE_URL)) return openPostgres(settings.DATABASE_URL, settings.onPoolError, settings.queryTimeoutMs);
  if (settings.DATABASE_URL) throw new Error("DATABASE_URL must be a postgres:// or postgresql:// URL (unset it to use SQLite)");
  return openSqlite(settings.sqlitePath);
}

function openSqlite(path: string): SqliteDatabase {
  const db = openDb(path);
  const store = sqliteStore(db);
  return {
    dialect: "sqlite",
    db,
    store,
    location: path,
    migrate: async () => migrateSqlite(db),
    close: async () => {
      db.$client.close();
    },
  };
}

/** How long opening a PostgreSQL connection (or waiting for a free one of the pool) may take. */
const PG_CONNECT_TIMEOUT_MS = 5_000;
/** How long a statement may run (the server's statement_timeout; the client waits a second more). A
 * connection whose peer vanished without a reset (its
 * host died, a firewall or NAT dropped the connection's state) stays open and silent until the
 * kernel gives up, ~15 min; a query on it used to wait that long, and with it the leader's lease
 * round, so the elector never ran another round. With this, the query fails and the pool discards
 * the connection. Both this and PG_CONNECT_TIMEOUT_MS are below the default lease TTL (6 s): a
 * lease round fails at its first statement without an answer, it cannot hang for longer. */
const PG_QUERY_TIMEOUT_MS = 4_000;
/** Idle time after which TCP keepalive probes a pooled connection, so that one whose peer vanished
 * is found dead (and dropped from the pool) without a query. */
const PG_KEEPALIVE_DELAY_MS = 5_000;

/** node-postgres's own timeout (query_timeout): the server did not answer, the statement may still run. */
function isClientTimeout(error: unknown): boolean {
  // drizzle wraps the driver's error ("Failed query: …") with it as the cause.
  for (let current: unknown = error; current instanceof Error; current = current.cause) {
    if (/Query read timeout/.test(current.message)) return true;
  }
  return false;
}

/** Advisory-lock key that serialises migrations of concurrent consoles ("meridian" in ASCII, truncated). */
const MIGRATION_LOCK_KEY = 0x6d657269;

function openPostgres(url: string, onPoolError?: (error: Error) => void, queryTimeoutMs: number = PG_QUERY_TIMEOUT_MS): PostgresDatabase {
  const connection = {
    connectionString: url,
    // A server that accepts the connection and never answers (a wrong port, a hung server) fails a
    // query after this long instead of holding it, and `npm start`, forever.
    connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: PG_KEEPALIVE_DELAY_MS,
  };
  // The server ends a statement that runs past the timeout (statement_timeout, lock waits included):
  // a client that only stopped waiting left the statement running, its transaction's row locks held
  // and a lone write applied after its caller was told it failed. The client's own timeout, a second
  // later, is the backstop for a connection whose server no longer answers at all.
  const pool = new pg.Pool({ ...connection, max: 10, statement_timeout: queryTimeoutMs, query_timeout: queryTimeoutMs + 1_000 });
  pool.on("error", (error) => onPoolError?.(error));
  const db = drizzlePg(pool, { schema: pgTables }) as PgDb;
  const store: Store = {
    dialect: "pg",
    db,
    tables: pgTables,
    // BEGIN … COMMIT on one client of the pool, by hand rather than drizzle's db.transaction(): that
    // one returns a client whose statement timed out to the pool (every later query on it waits
    // behind the unanswered one), keeps the client for good when BEGIN fails, and lets a failed
    // ROLLBACK replace the error that failed the transaction. Here a client goes back to the pool
    // only after its COMMIT or ROLLBACK was answered; otherwise the pool closes it.
    async transaction(work) {
      const client = await pool.connect();
      let answered = false;
      try {
        await client.query("BEGIN");
        const tx = drizzlePg(client) as unknown as PgDb;
        let result: Awaited<ReturnType<typeof work>>;
        try {
          result = await work({ dialect: "pg", db: tx, tables: pgTables });
        } catch (error) {
          // A connection whose statement got no answer gets none for the ROLLBACK either: it would
          // wait a second timeout behind the first. The pool closes that connection (below).
          if (isClientTimeout(error)) throw error;
          await client.query("ROLLBACK").then(
            () => {
              answered = true;
            },
            () => undefined, // the error that failed the transaction is the one to report
          );
          throw error;
        }
        await client.query("COMMIT");
        answered = true;
        return result;
      } finally {
        client.release(answered ? undefined : new Error("the transaction's connection did not answer; closed"));
      }
    },
  };
  return {
    dialect: "pg",
    db,
    store,
    location: redactPassword(url),
    async migrate() {
      // A client of its own, without the query timeout: a migration's statement, or the wait for
      // another console's migration (the advisory lock), may take longer than a query of the console.
      const client = new pg.Client(connection);
      client.on("error", (error) => onPoolError?.(error));
      await client.connect();
      try {
        await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
        await migratePg(drizzlePg(client), { migrationsFolder: migrationsFolder("drizzle-pg") });
      } finally {
        await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]).catch(() => undefined);
        await client.end().catch(() => undefined);
      }
    },
    close: () => pool.end(),
  };
}

function redactPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "postgres://(unparseable URL)";
  }
}
