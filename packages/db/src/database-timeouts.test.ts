// PostgreSQL statements that run past the timeout: the server ends them (statement_timeout), so a
// transaction reported failed holds no row locks afterwards and a lone write reported failed is not
// made later; and a transaction fails after one timeout, its ROLLBACK not queued behind the statement.
// A throwaway server on loopback, started here and stopped after. Run: node --import tsx --test packages/db/src/database-timeouts.test.ts
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { sql } from "drizzle-orm";
import { createDatabase, type PostgresDatabase } from "./database";
import { startPostgres, type PostgresServer } from "./testing/postgres-server";

let server: PostgresServer;
let database: PostgresDatabase;
const TIMEOUT = 500;
before(async () => {
  server = await startPostgres();
  const url = await server.createDatabase("timeouts");
  database = createDatabase({ DATABASE_URL: url, sqlitePath: "", queryTimeoutMs: TIMEOUT }) as PostgresDatabase;
  await database.migrate();
  await database.store.db.insert(database.store.tables.regions).values({ id: "r1", name: "r1", createdAt: 1 });
});
after(async () => {
  await database?.close();
  await server?.stop();
});

test("a transaction whose statement times out fails after one query timeout, not two", async () => {
  const t0 = performance.now();
  await assert.rejects(
    database.store.transaction(async (tx) => {
      await (tx.db as unknown as { execute(query: ReturnType<typeof sql>): Promise<unknown> }).execute(sql`select pg_sleep(2)`);
    }),
  );
  const took = performance.now() - t0;
  assert.ok(took < TIMEOUT * 1.6, `failed after ${Math.round(took)} ms (ROLLBACK queued behind the unanswered statement waits its own timeout)`);
});

test("a transaction that timed out does not keep its row locks on the server past the timeout", async () => {
  const { regions } = database.store.tables;
  const doomed = database.store.transaction(async (tx) => {
    await tx.db.update(regions).set({ name: "locked" }).where(sql`${regions.id} = 'r1'`);
    await (tx.db as unknown as { execute(query: ReturnType<typeof sql>): Promise<unknown> }).execute(sql`select pg_sleep(3)`);
  });
  await assert.rejects(doomed);
  // Another console's write of the same row, right after the first transaction was reported failed.
  const res = await database.store.db
    .update(regions)
    .set({ name: "other" })
    .where(sql`${regions.id} = 'r1'`)
    .then(
      () => "ok",
      (e: Error) => `failed: ${e.message.slice(0, 60)}`,
    );
  assert.equal(res, "ok", "the next write of that row timed out: the failed transaction's backend still held the row lock");
});

test("a lone write reported as failed (query timeout) is not made afterwards", async () => {
  const { regions } = database.store.tables;
  await new Promise((r) => setTimeout(r, 3000)); // let the previous test's backends finish
  await database.store.db.update(regions).set({ name: "before" }).where(sql`${regions.id} = 'r1'`);
  const holder = database.store.transaction(async (tx) => {
    await tx.db.update(regions).set({ name: "before" }).where(sql`${regions.id} = 'r1'`);
    await new Promise((r) => setTimeout(r, 400)); // another console holds the row for 400 ms (each statement answered)
  });
  await new Promise((r) => setTimeout(r, 50));
  // This write's statement waits for the lock past the short timeout below? Use a slow lock: keep it simple with pg_sleep.
  await holder;
  const slow = database.store.transaction(async (tx) => {
    await tx.db.update(regions).set({ name: "held" }).where(sql`${regions.id} = 'r1'`);
    await (tx.db as unknown as { execute(query: ReturnType<typeof sql>): Promise<unknown> }).execute(sql`select pg_sleep(1.5)`);
  });
  const lone = database.store.db
    .update(regions)
    .set({ name: "lone-write" })
    .where(sql`${regions.id} = 'r1'`)
    .then(
      () => "ok",
      (e: Error) => `failed: ${(e.cause as Error | undefined)?.message ?? e.message}`,
    );
  await assert.rejects(slow);
  const answered = await lone;
  await new Promise((r) => setTimeout(r, 2500));
  const [row] = await database.store.db.select().from(regions).where(sql`${regions.id} = 'r1'`);
  assert.ok(!(answered.startsWith("failed") && row?.name === "lone-write"), "the write was answered as failed, and then made");
});
