// migrate: applies the committed drizzle/ migrations to the console's SQLite file and exits.
// Run:    node --import tsx scripts/lib/migrate.ts   (npm start runs it before the console)
// Env:    MERIDIAN_DB_PATH (default data/meridian.db, relative to the repository root)
// Prints: "migrated <path>" on success; the error and exit code 1 otherwise.
import { isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { migrate, openDb } from "@meridian/db";

const root = resolve(fileURLToPath(import.meta.url), "..", "..", "..");
const env = z.object({ MERIDIAN_DB_PATH: z.string().min(1).default("data/meridian.db") }).parse(process.env);
const path = isAbsolute(env.MERIDIAN_DB_PATH) ? env.MERIDIAN_DB_PATH : resolve(root, env.MERIDIAN_DB_PATH);
try {
  const db = openDb(path);
  migrate(db);
  db.$client.close();
  process.stdout.write(`migrated ${path}\n`);
} catch (error) {
  process.stderr.write(`migrate: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
