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

/** How long opening a PostgreSQL connection may take. */
const PG_CONNECT_TIMEOUT_MS = 10_000;

/** Advisory-lock key that serialises migrations of concurrent consoles ("meridian" in ASCII, truncated). */
const MIGRATION_LOCK_KEY = 0x6d657269;

function openPostgres(url: string, onPoolError?: (error: Error) => void): PostgresDatabase {
  // A server that accepts the connection and never answers (a wrong port, a hung server) fails a
  // query after this long instead of holding it, and `npm start`, forever.
  const pool = new pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS });
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
