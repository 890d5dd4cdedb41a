// Test harness: a ConsoleRuntime on a fresh database, cleaned up by close(). The console suites run
// on both stores: SQLite (a temporary file; the default) and, with MERIDIAN_TEST_STORE=pg, a fresh
// database per harness on a real PostgreSQL server: the one at MERIDIAN_TEST_PG_URL (npm test
// starts one for its PostgreSQL pass, scripts/lib/test-postgres.ts), or else one this process
// starts on first use and stops when it exits.
import "server-only";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import { createDatabase, type Database } from "@meridian/db";
import { createDatabaseOn, type PostgresServer, startPostgres } from "@meridian/db/testing/postgres-server";
import { findRepoRoot } from "../../env";
import { ConsoleRuntime, type RuntimeOptions } from "../runtime/runtime";
import type { Actor } from "../audit-trail";

/** The LB token every test LB gets unless a test asks for real random ones (`newLbToken`). */
export const TEST_TOKEN = `mlt_${"h".repeat(43)}`;
/** The machine token /api/entrypoints accepts in tests. */
export const ENTRYPOINTS_TOKEN = "test-entrypoints-token";
export const OPERATOR: Actor = { username: "admin", role: "operator" };

export interface Harness {
  rt: ConsoleRuntime;
  dir: string;
  /** The store this harness runs on, for tests that open a second console on the same data. */
  database: Database;
  /** How to open the same database again (a second console): its DATABASE_URL, or its SQLite file. */
  settings: { DATABASE_URL?: string; sqlitePath: string };
  close(): Promise<void>;
}

/** The store the console suites run on in this process (MERIDIAN_TEST_STORE: sqlite or pg). */
function testStore(): "sqlite" | "pg" {
  const store = process.env.MERIDIAN_TEST_STORE ?? "sqlite";
  if (store !== "sqlite" && store !== "pg") throw new Error(`MERIDIAN_TEST_STORE must be sqlite or pg, not "${store}"`);
  return store;
}

/** Without MERIDIAN_TEST_PG_URL (one file run by hand): a server of this process's own, started for
 * the first open harness and stopped when the last one closes. */
let ownServer: Promise<PostgresServer> | undefined;
let ownServerUsers = 0;

/** A fresh, empty PostgreSQL database for one harness, and what to call when the harness closes. */
async function freshPostgresDatabase(): Promise<{ url: string; release: () => Promise<void> }> {
  const shared = process.env.MERIDIAN_TEST_PG_URL;
  const name = `console_${randomBytes(6).toString("hex")}`;
  if (shared) return { url: await createDatabaseOn(shared, name), release: async () => undefined };
  ownServer ??= startPostgres();
  ownServerUsers += 1;
  const server = await ownServer;
  return {
    url: await server.createDatabase(name),
    release: async () => {
      ownServerUsers -= 1;
      if (ownServerUsers > 0) return;
      ownServer = undefined;
      await server.stop();
    },
  };
}

/** The settings of a fresh database of the store under test (SQLite: a file in `dir`), and what to
 * call once it is closed. */
async function freshDatabase(dir: string): Promise<{ settings: { DATABASE_URL?: string; sqlitePath: string }; release: () => Promise<void> }> {
  const sqlitePath = join(dir, "console.db");
  if (testStore() === "sqlite") return { settings: { sqlitePath }, release: async () => undefined };
  const { url, release } = await freshPostgresDatabase();
  return { settings: { DATABASE_URL: url, sqlitePath }, release };
}

/** `log`: a logger to capture what the runtime logs (default: silent). */
export async function createHarness(options: Partial<RuntimeOptions> = {}, log?: Logger): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), "meridian-console-"));
  const { settings, release } = await freshDatabase(dir);
  const database = createDatabase(settings);
  const rt = new ConsoleRuntime(
    database,
    {
      entrypointsTokenSha256: createHash("sha256").update(ENTRYPOINTS_TOKEN).digest("hex"),
      newLbToken: () => TEST_TOKEN,
      repoRoot: findRepoRoot(),
      healthIntervalMs: 60_000,
      failoverAfter: 2,
      autoFailover: true,
      sessionTtlMs: 3_600_000,
      traceDirs: [],
      probeTimeoutMs: 1_000,
      ...options,
    },
    log,
  );
  await rt.migrate();
  return {
    rt,
    dir,
    database,
    settings,
    async close() {
      await rt.stop();
      await database.close();
      await release();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls `check` until it returns a truthy value or `timeoutMs` passes. The bound only stops a
 * test that would otherwise hang; it is generous so a loaded machine does not fail a correct run. */
export async function waitFor<T>(check: () => T | Promise<T>, timeoutMs = 15_000, what = "condition"): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
