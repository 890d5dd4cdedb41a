// Issue 14's acceptance command, as an operator runs it: `MERIDIAN_DEMO=0 DATABASE_URL=… npm start`
// serves the console on PostgreSQL. A real PostgreSQL server (started here on loopback in a
// temporary directory, stopped after) and a second `npm start` (scripts/start.mjs, on its own port,
// no demo fleet, on the build `npm test` just made); the operator logs in, creates a region in the
// browser, and the row is in PostgreSQL. Both processes are stopped by PID.
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { expect, test } from "@playwright/test";
import pg from "pg";
import { type PostgresServer, startPostgres } from "../packages/db/src/testing/postgres-server";
import { CONSOLE_PORT } from "./env";

const PORT = CONSOLE_PORT + 50;
const URL_ = `http://127.0.0.1:${PORT}`;
const ADMIN = { username: "admin", password: "e2e-postgres-admin-1" };

let server: PostgresServer | undefined;
let databaseUrl = "";
let console_: ChildProcess | undefined;
let output = "";

test.beforeAll(async () => {
  test.setTimeout(180_000);
  server = await startPostgres();
  databaseUrl = await server.createDatabase("meridian_e2e");
  console_ = spawn(process.execPath, [join(process.cwd(), "scripts", "start.mjs")], {
    cwd: process.cwd(),
    env: {
      ...process.env,
      MERIDIAN_DEMO: "0",
      DATABASE_URL: databaseUrl,
      MERIDIAN_PORT: String(PORT),
      MERIDIAN_ADMIN_PASSWORD: ADMIN.password,
      MERIDIAN_SKIP_BUILD: "1",
      // Never the SQLite file of the e2e fleet's console: this console must not need one.
      MERIDIAN_DB_PATH: join(process.env.MERIDIAN_E2E_DATA_DIR ?? "/nonexistent", "unused-by-postgres.db"),
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4_000);
  };
  console_.stdout?.on("data", keep);
  console_.stderr?.on("data", keep);
  await expect
    .poll(
      async () => {
        if (console_?.exitCode !== null) throw new Error(`npm start exited (${console_?.exitCode}):\n${output}`);
        const res = await fetch(`${URL_}/api/health`).catch(() => null);
        return res?.ok ? ((await res.json()) as { leader?: { self?: boolean } }).leader?.self : false;
      },
      { timeout: 150_000, message: "the PostgreSQL console answers /api/health as the leader" },
    )
    .toBe(true);
});

test.afterAll(async () => {
  const child = console_;
  if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    const gone = new Promise((resolve) => child.once("exit", resolve));
    process.kill(child.pid, "SIGTERM");
    await gone;
  }
  await server?.stop();
});

test("MERIDIAN_DEMO=0 DATABASE_URL=… npm start serves the console on PostgreSQL", async ({ page }) => {
  const login = await page.request.post(`${URL_}/api/auth/login`, { data: ADMIN, headers: { origin: URL_ } });
  expect(login.status()).toBe(200);
  await page.goto(`${URL_}/regions`);
  await page.getByTestId("region-create-name").fill("pg-region");
  await page.getByTestId("region-create-submit").click();
  await expect(page.getByTestId("region-row-pg-region")).toBeVisible();

  // The row is in PostgreSQL, and so is the audit entry that says who made it.
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const regions = await client.query<{ name: string }>("select name from regions");
    expect(regions.rows.map((row) => row.name)).toEqual(["pg-region"]);
    const audit = await client.query<{ actor: string }>("select actor from audit_log where action = 'region.create'");
    expect(audit.rows.map((row) => row.actor)).toEqual(["admin"]);
  } finally {
    await client.end();
  }
});
