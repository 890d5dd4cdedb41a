import { existsSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { drizzle, type BetterSQLite3Database } from "drizzle-orm/better-sqlite3";
import { readMigrationFiles } from "drizzle-orm/migrator";
import * as schema from "./schema/index";

export type Db = BetterSQLite3Database<typeof schema> & { $client: Database.Database };

/** How long one statement waits, inside SQLite's busy handler, for a lock another process (the
 * migrate step, a second console, an operator's sqlite3 shell) holds. better-sqlite3 is synchronous:
 * the whole process, its event loop included, waits this long. So it is short, and the store
 * (sqlite-store.ts) retries a write refused with SQLITE_BUSY asynchronously, with backoff, instead. */
const SQLITE_BUSY_TIMEOUT_MS = 20;
/** The migration's own wait for a lock: it runs at start-up (or in the migrate step), before any
 * request is served, and failing it fails the start. */
const MIGRATE_BUSY_TIMEOUT_MS = 5_000;

/** Opens (creating when missing) the SQLite file at `path` (":memory:" for tests), in WAL mode with
 * foreign keys enforced. */
export function openDb(path: string): Db {
  if (path !== ":memory:" && !path.startsWith("file:")) mkdirSync(dirname(resolve(path)), { recursive: true });
  const sqlite = new Database(path);
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("foreign_keys = ON");
  // Several processes (console, migrate step) may touch the file: a statement waits a moment for a
  // lock, and no longer (the wait blocks the event loop); the store retries asynchronously.
  sqlite.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  return drizzle(sqlite, { schema }) as Db;
}

const JOURNAL = join("meta", "_journal.json");

/** Finds a committed migrations folder (`drizzle` for SQLite, `drizzle-pg` for PostgreSQL). The package's own location works under tsx; inside a Next
 * server bundle import.meta.url points into .next/, so also walk up from the working directory. */
export function migrationsFolder(name: "drizzle" | "drizzle-pg" = "drizzle"): string {
  const candidates: string[] = [];
  try {
    candidates.push(resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", name));
  } catch {
    // import.meta.url is not a file: URL inside some bundles; the cwd walk below covers that.
  }
  // Found at run time, never traced at build time: a walk up from the working directory would make
  // Next's file tracer include the whole project in the console's server bundle.
  for (let dir = process.cwd(); ; dir = dirname(dir)) {
    candidates.push(join(/* turbopackIgnore: true */ dir, name));
    if (dirname(dir) === dir) break;
  }
  const found = candidates.find((dir) => existsSync(join(dir, JOURNAL)));
  if (!found) throw new Error(`${name} migrations not found (looked in ${candidates.slice(0, 3).join(", ")} ...)`);
  return found;
}

/** Applies every pending migration from drizzle/ (idempotent). Waits up to 5 s for a lock another
 * process holds (synchronously: it runs before the console serves anything).
 *
 * drizzle's own SQLite migrator reads the last applied migration before its (deferred) BEGIN: with two
 * consoles sharing the file and starting together, the second read "not applied" while the first
 * migrated, then re-ran the migration after it and failed ("duplicate column name"). Here the write
 * lock (BEGIN IMMEDIATE) comes first, so the second waits, then finds nothing to do. The steps and
 * the __drizzle_migrations table are drizzle's, so either migrator reads what the other wrote. */
export function migrate(db: Db, folder: string = migrationsFolder()): void {
  const client = db.$client;
  const migrations = readMigrationFiles({ migrationsFolder: folder });
  const busyTimeout = client.pragma("busy_timeout", { simple: true }) as number;
  client.pragma(`busy_timeout = ${MIGRATE_BUSY_TIMEOUT_MS}`);
  try {
    client.exec("BEGIN IMMEDIATE");
    try {
      client.exec('CREATE TABLE IF NOT EXISTS "__drizzle_migrations" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)');
      const last = client.prepare('SELECT created_at FROM "__drizzle_migrations" ORDER BY created_at DESC LIMIT 1').pluck().get();
      const record = client.prepare('INSERT INTO "__drizzle_migrations" ("hash", "created_at") VALUES (?, ?)');
      for (const migration of migrations) {
        if (last !== undefined && last !== null && Number(last) >= migration.folderMillis) continue;
        for (const statement of migration.sql) client.prepare(statement).run();
        record.run(migration.hash, migration.folderMillis);
      }
      client.exec("COMMIT");
    } catch (error) {
      client.exec("ROLLBACK");
      throw error;
    }
  } finally {
    client.pragma(`busy_timeout = ${busyTimeout}`);
  }
}

export { schema };
