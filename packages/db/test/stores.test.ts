// The same queries, through Store, on SQLite and on a real PostgreSQL server (started here on
// loopback in a temporary directory, stopped by PID at the end).
import { strict as assert } from "node:assert";
import { describe, test } from "node:test";
import { eq, sql } from "drizzle-orm";
import { createDatabase, type Database, largerOf } from "../src/index";
import { storesForTests } from "../src/testing/postgres-server";

const both = storesForTests("meridian-db-stores");

const stores: { name: string; open: (id: string) => Promise<Database> }[] = [
  { name: "sqlite", open: async (id) => createDatabase({ sqlitePath: both.sqlitePath(id) }) },
  { name: "postgres", open: async (id) => createDatabase({ DATABASE_URL: await both.postgresUrl(id), sqlitePath: "unused" }) },
];

for (const { name, open } of stores) {
  describe(`store on ${name}`, () => {
    test("migrates idempotently, and two consoles migrating at once both end with one schema", async () => {
      const first = await open(`${name}_migrate`);
      const second = createDatabase({ DATABASE_URL: first.dialect === "pg" ? urlOf(first) : undefined, sqlitePath: first.location });
      await Promise.all([first.migrate(), second.migrate()]);
      await first.migrate();
      const { db, tables } = first.store;
      await db.insert(tables.regions).values({ id: "us", name: "us-ashburn", createdAt: 1_700_000_000_000 });
      const rows = await second.store.db.select().from(second.store.tables.regions);
      assert.deepEqual(rows, [{ id: "us", name: "us-ashburn", displayName: null, clientKeysRequired: false, createdAt: 1_700_000_000_000 }]);
      await Promise.all([first.close(), second.close()]);
    });

    test("round-trips every column kind with the same row types, and enforces foreign keys", async () => {
      const database = await open(`${name}_kinds`);
      await database.migrate();
      const { db, tables } = database.store;
      await db.insert(tables.regions).values({ id: "eu", name: "eu-frankfurt", createdAt: 1 });
      await db.insert(tables.loadBalancers).values({ id: "lb", name: "lb-eu", url: "http://127.0.0.1:1", regionId: "eu", createdAt: 2 ** 42 });
      const [lb] = await db.select().from(tables.loadBalancers).where(eq(tables.loadBalancers.id, "lb"));
      assert.equal(lb?.createdAt, 2 ** 42, "millisecond timestamps beyond 32 bits survive");
      assert.equal(lb?.failedOverAutomatically, false);
      assert.equal(lb?.weightRtt, 0.5);
      assert.equal(lb?.state, "healthy");
      const [user] = await db.insert(tables.users).values({ username: "admin", role: "operator", passwordHash: "x", createdAt: 1, updatedAt: 1 }).returning();
      assert.equal(user?.id, 1, "ids are generated");
      const updated = await db
        .update(tables.loadBalancers)
        .set({ failedOverAutomatically: true, weightRtt: 0.123456789 })
        .where(eq(tables.loadBalancers.id, "lb"))
        .returning();
      assert.equal(updated[0]?.failedOverAutomatically, true);
      assert.equal(updated[0]?.weightRtt, 0.123456789, "weights keep double precision");
      await assert.rejects(async () => {
        await db.insert(tables.loadBalancers).values({ id: "x", name: "x", url: "http://x", regionId: "nowhere", createdAt: 1 });
      });
      await database.close();
    });

    test("largerOf is the larger of a column and a value, in both dialects, and never lowers it", async () => {
      const database = await open(`${name}_larger`);
      await database.migrate();
      const { db, tables } = database.store;
      const lbs = tables.loadBalancers;
      await db.insert(tables.regions).values({ id: "eu", name: "eu-frankfurt", createdAt: 1 });
      await db.insert(lbs).values({ id: "lb", name: "lb-eu", url: "http://127.0.0.1:1", regionId: "eu", createdAt: 1, ackedVersion: 5 });
      const acked = async (version: number) =>
        (
          await db
            .update(lbs)
            .set({ ackedVersion: largerOf(lbs.ackedVersion, version) })
            .where(eq(lbs.id, "lb"))
            .returning()
        )[0]?.ackedVersion;
      assert.equal(await acked(3), 5, "an older value does not lower it");
      assert.equal(await acked(5), 5);
      assert.equal(await acked(9), 9);
      const bumped = await db
        .update(lbs)
        .set({ createdAt: largerOf(sql`${lbs.createdAt} + 1`, 1) })
        .where(eq(lbs.id, "lb"))
        .returning();
      assert.equal(bumped[0]?.createdAt, 2, "an expression against a value below it");
      await database.close();
    });

    test("a transaction that throws leaves nothing behind; one that returns commits", async () => {
      const database = await open(`${name}_tx`);
      await database.migrate();
      const { tables } = database.store;
      await assert.rejects(
        database.store.transaction(async (tx) => {
          await tx.db.insert(tables.regions).values({ id: "a", name: "a", createdAt: 1 });
          throw new Error("abort");
        }),
        /abort/,
      );
      const kept = await database.store.transaction(async (tx) => {
        await tx.db.insert(tables.regions).values({ id: "b", name: "b", createdAt: 1 });
        return tx.db.select().from(tables.regions);
      });
      assert.deepEqual(
        kept.map((r) => r.id),
        ["b"],
      );
      assert.deepEqual(
        (await database.store.db.select().from(tables.regions)).map((r) => r.id),
        ["b"],
      );
      await database.close();
    });
  });
}

test("a DATABASE_URL that is not PostgreSQL is refused with a clear error", () => {
  assert.throws(() => createDatabase({ DATABASE_URL: "mysql://x", sqlitePath: "unused" }), /postgres:\/\//);
});

function urlOf(database: Database): string {
  return database.dialect === "pg" ? (database.db.$client.options.connectionString ?? "") : "";
}
