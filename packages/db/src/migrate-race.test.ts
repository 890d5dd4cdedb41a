// Two consoles sharing one SQLite file (README "Running two consoles") upgrade at once: the one that
// migrates while the other's migration holds the write lock waits for it, then finds nothing to do.
// It used to fail its start with "duplicate column name": drizzle's migrator read the applied list
// before taking the lock. The other console is a child process doing what a migrator does (BEGIN,
// the migration's statements, the __drizzle_migrations row), holding the lock a moment before COMMIT.
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { migrate, migrationsFolder, openDb } from "@meridian/db";
import { migrationsUpTo } from "./testing/migrations-up-to";

const dir = mkdtempSync(join(tmpdir(), "meridian-migrate-race-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("a console migrating while another console's migration of the same SQLite file is in progress does not fail", async () => {
  const file = join(dir, "shared.db");
  const db = openDb(file);
  migrate(db, migrationsUpTo(dir, "0007_lb_failover_entrypoint")); // the database as the previous release left it
  const journal = JSON.parse(readFileSync(join(migrationsFolder(), "meta", "_journal.json"), "utf8")) as { entries: { tag: string; when: number }[] };
  const last = journal.entries.at(-1)!;
  const statements = readFileSync(join(migrationsFolder(), `${last.tag}.sql`), "utf8").split("--> statement-breakpoint");

  // The other console: drizzle's migrator's own steps, holding the write lock for a moment before COMMIT.
  const script = `
    const Database = require("better-sqlite3");
    const db = new Database(${JSON.stringify(file)});
    db.pragma("busy_timeout = 5000");
    db.exec("BEGIN");
    for (const s of ${JSON.stringify(statements)}) db.exec(s);
    db.prepare('INSERT INTO "__drizzle_migrations" ("hash", "created_at") VALUES (?, ?)').run("other", ${last.when});
    process.stdout.write("holding\\n");
    setTimeout(() => { db.exec("COMMIT"); db.close(); }, 300);
  `;
  const child = spawn(process.execPath, ["-e", script], { cwd: join(import.meta.dirname, ".."), stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));

  // This console (npm start's migrate step, or the runtime's) migrates meanwhile.
  let error: unknown = null;
  try {
    migrate(db);
  } catch (e) {
    error = e;
  }
  await new Promise((resolve) => child.once("exit", resolve));
  db.$client.close();
  assert.equal(
    error,
    null,
    `migrate failed: ${String((error as Error | null)?.message ?? "")} / cause: ${String((error as { cause?: Error } | null)?.cause?.message ?? "")}`,
  );
});
