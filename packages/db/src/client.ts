import { existsSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { drizzle, type BetterSQLite3Database } from "drizzle-orm/better-sqlite3";
import { migrate as drizzleMigrate } from "drizzle-orm/better-sqlite3/migrator";
import * as schema from "./schema/index";

export type Db = BetterSQLite3Database<typeof schema> & { $client: Database.Database };

/** Opens (creating when missing) the SQLite file at `path` (":memory:" for tests), in WAL mode with
 * foreign keys enforced. */
export function openDb(path: string): Db {
  if (path !== ":memory:" && !path.startsWith("file:")) mkdirSync(dirname(resolve(path)), { recursive: true });
  const sqlite = new Database(path);
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("foreign_keys = ON");
  // Several processes (console, migrate step) may touch the file; wait instead of failing on a lock.
  sqlite.pragma("busy_timeout = 5000");
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

/** Applies every pending migration from drizzle/ (idempotent). */
export function migrate(db: Db, folder: string = migrationsFolder()): void {
  drizzleMigrate(db, { migrationsFolder: folder });
}

export { schema };
