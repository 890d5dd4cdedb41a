import { strict as assert } from "node:assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { eq } from "drizzle-orm";
import { migrate, openDb } from "./client";
import { sqliteStore } from "./sqlite-store";

const dir = mkdtempSync(join(tmpdir(), "meridian-sqlite-store-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function freshStore(name: string) {
  const db = openDb(join(dir, `${name}.db`));
  migrate(db);
  return { db, store: sqliteStore(db) };
}

/** A transaction that has written and stays open until `release()`, then fails (a 409 mid-transaction). */
async function openDoomedTransaction(store: ReturnType<typeof sqliteStore>): Promise<{ doomed: Promise<unknown>; release: () => void }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let started!: () => void;
  const open = new Promise<void>((resolve) => (started = resolve));
  const doomed = store.transaction(async (tx) => {
    await tx.db.insert(tx.tables.regions).values({ id: "doomed", name: "doomed", createdAt: 1 });
    started();
    await released;
    throw new Error("conflict");
  });
  await open;
  return { doomed, release };
}

test("a write outside any transaction survives another transaction's rollback (it waits for its turn)", async () => {
  const { db, store } = freshStore("rollback");
  const { doomed, release } = await openDoomedTransaction(store);
  // The transaction is open on the one connection: an audit row written now used to join it.
  // (Awaiting starts the statement at once, as a caller's `await` does.)
  const audit = (async () => {
    await store.db.insert(store.tables.auditLog).values({ at: 1, actor: "op", action: "tuner.stop", target: "fleet", before: null, after: null });
  })();
  release();
  await assert.rejects(doomed, /conflict/);
  await audit;
  const rows = await store.db.select().from(store.tables.auditLog);
  assert.deepEqual(
    rows.map((r) => r.action),
    ["tuner.stop"],
  );
  assert.equal((await store.db.select().from(store.tables.regions).where(eq(store.tables.regions.id, "doomed"))).length, 0);
  db.$client.close();
});

test("a write through the store inside a transaction's work runs in it (no wait on itself), and rolls back with it", async () => {
  const { db, store } = freshStore("inside");
  await assert.rejects(
    store.transaction(async () => {
      await store.db.insert(store.tables.regions).values({ id: "in", name: "in", createdAt: 1 });
      throw new Error("boom");
    }),
    /boom/,
  );
  assert.equal((await store.db.select().from(store.tables.regions)).length, 0);
  db.$client.close();
});

test("writes outside transactions keep their order and their results (returning, errors)", async () => {
  const { db, store } = freshStore("order");
  const { regions } = store.tables;
  const first = store.db.insert(regions).values({ id: "a", name: "a", createdAt: 1 }).returning({ id: regions.id });
  const duplicate = store.db.insert(regions).values({ id: "a", name: "a", createdAt: 2 });
  const renamed = store.db.update(regions).set({ name: "a2" }).where(eq(regions.id, "a")).returning({ name: regions.name });
  assert.deepEqual(await first, [{ id: "a" }]);
  await assert.rejects(duplicate, /UNIQUE/);
  assert.deepEqual(await renamed, [{ name: "a2" }]);
  await store.db.delete(regions).where(eq(regions.id, "a"));
  assert.equal((await store.db.select().from(regions)).length, 0);
  db.$client.close();
});

test("background work a transaction started writes in a turn of its own later, not inside the next transaction", async () => {
  const { db, store } = freshStore("background");
  let fire!: () => void;
  const fired = new Promise<void>((resolve) => (fire = resolve));
  let later!: Promise<unknown>;
  await store.transaction(async () => {
    // Started in A's work, run after A committed (a timer, a kick, a retry).
    later = fired.then(() =>
      store.db.insert(store.tables.auditLog).values({ at: 1, actor: "op", action: "background", target: "fleet", before: null, after: null }),
    );
  });
  const { doomed, release } = await openDoomedTransaction(store);
  fire(); // the background write starts while B is open...
  await new Promise((resolve) => setImmediate(resolve)); // (every microtask it queued has run)
  release(); // ...and B then fails
  await assert.rejects(doomed, /conflict/);
  await later;
  assert.deepEqual(
    (await store.db.select().from(store.tables.auditLog)).map((r) => r.action),
    ["background"],
  );
  db.$client.close();
});
