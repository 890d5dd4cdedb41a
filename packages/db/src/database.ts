// createDatabase: the console's store, chosen by DATABASE_URL. A postgres:// (or postgresql://) URL
// opens a node-postgres pool; anything else is better-sqlite3 on the SQLite file, as before.
// Both come with the same tables (src/schema/columns.ts builds both dialects from one declaration)
// and with a `store`: the query surface both drivers share, for code that must run on either.
import { sql } from "drizzle-orm";
import { drizzle as drizzlePg, type NodePgDatabase } from "drizzle-orm/node-postgres";
import { migrate as migratePg } from "drizzle-orm/node-postgres/migrator";
import pg from "pg";
import { migrate as migrateSqlite, migrationsFolder, openDb, type Db } from "./client";
import * as sqliteTables from "./schema/index";
import * as pgTables from "./schema/pg";

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
   * transactions on the one connection are serialised and `work` must await only this store's
   * queries (another query that ran on the connection meanwhile would join the transaction). */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
}

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
}

export function isPostgresUrl(url: string | undefined): url is string {
  return url !== undefined && /^postgres(ql)?:\/\//.test(url);
}

export function createDatabase(settings: DatabaseSettings): Database {
  if (isPostgresUrl(settings.DATABASE_URL)) return openPostgres(settings.DATABASE_URL, settings.onPoolError);
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

/** The Store of an open SQLite database (createDatabase builds it; exported for code that opened
 * the file itself with openDb). */
export function sqliteStore(db: Db): Store {
  let queue: Promise<unknown> = Promise.resolve();
  return {
    dialect: "sqlite",
    db: db as unknown as StoreDb,
    tables: sqliteTables as unknown as typeof pgTables,
    transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
      const tx: Queryable = { dialect: "sqlite", db: db as unknown as StoreDb, tables: sqliteTables as unknown as typeof pgTables };
      // better-sqlite3's own transaction() refuses async work, so BEGIN/COMMIT by hand, one at a time.
      // A deferred BEGIN, as better-sqlite3's transaction() uses: while another process holds the
      // write lock, the first write fails at once with SQLITE_BUSY (the console answers 503, retry),
      // whereas BEGIN IMMEDIATE would sit in the busy handler for busy_timeout, and better-sqlite3
      // waits synchronously: the whole console, reads included, would stall meanwhile.
      const run = queue.then(async () => {
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
      queue = run.catch(() => undefined);
      return run;
    },
  };
}

/** Advisory-lock key that serialises migrations of concurrent consoles ("meridian" in ASCII, truncated). */
const MIGRATION_LOCK_KEY = 0x6d657269;

function openPostgres(url: string, onPoolError?: (error: Error) => void): PostgresDatabase {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on("error", (error) => onPoolError?.(error));
  const db = drizzlePg(pool, { schema: pgTables }) as PgDb;
  const store: Store = {
    dialect: "pg",
    db,
    tables: pgTables,
    transaction: (work) => db.transaction((tx) => work({ dialect: "pg", db: tx, tables: pgTables })),
  };
  return {
    dialect: "pg",
    db,
    store,
    location: redactPassword(url),
    async migrate() {
      const client = await pool.connect();
      try {
        await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
        await migratePg(drizzlePg(client), { migrationsFolder: migrationsFolder("drizzle-pg") });
      } finally {
        await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]).catch(() => undefined);
        client.release();
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
