// migrate: applies the committed migrations to the console's database and exits: drizzle/ to the
// SQLite file, or drizzle-pg/ to PostgreSQL when DATABASE_URL is a postgres:// URL.
// Run:    node --import tsx scripts/lib/migrate.ts   (npm start runs it before the console)
// Env:    DATABASE_URL (postgres://…; unset: SQLite), MERIDIAN_DB_PATH (the SQLite file, default
//         data/meridian.db, relative to the repository root)
// Prints: "migrated <path or URL without password>" on success; the error and exit code 1 otherwise.
import { isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { createDatabase } from "@meridian/db";

const root = resolve(fileURLToPath(import.meta.url), "..", "..", "..");
const env = z.object({ DATABASE_URL: z.string().optional(), MERIDIAN_DB_PATH: z.string().min(1).default("data/meridian.db") }).parse(process.env);
const path = isAbsolute(env.MERIDIAN_DB_PATH) ? env.MERIDIAN_DB_PATH : resolve(root, env.MERIDIAN_DB_PATH);
try {
  // Trimmed, and blank = unset, as the console reads it (apps/console/src/env.ts): both must open the same store.
  const database = createDatabase({ DATABASE_URL: env.DATABASE_URL?.trim() || undefined, sqlitePath: path });
  try {
    await database.migrate();
  } finally {
    await database.close();
  }
  process.stdout.write(`migrated ${database.location}\n`);
} catch (error) {
  process.stderr.write(`migrate: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
