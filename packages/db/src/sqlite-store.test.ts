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

/** Another process's connection holding the file's write lock until `release()`. */
function lockedByAnotherProcess(name: string): { release: () => void } {
  const other = openDb(join(dir, `${name}.db`)).$client;
  other.pragma("busy_timeout = 0");
  other.exec("BEGIN EXCLUSIVE");
  return {
    release: () => {
      other.exec("ROLLBACK");
      other.close();
    },
  };
}

test("a write and a transaction wait for another process's lock without stopping the event loop, then go through in order", async () => {
  const { db, store } = freshStore("locked");
  const { regions, auditLog } = store.tables;
  const lock = lockedByAnotherProcess("locked");
  const settled: string[] = [];
  const lone = store.db
    .insert(regions)
    .values({ id: "lone", name: "lone", createdAt: 1 })
    .then(
      () => settled.push("lone"),
      (error: unknown) => settled.push(`lone failed: ${String(error)}`),
    );
  const transaction = store
    .transaction(async (tx) => {
      await tx.db.insert(tx.tables.auditLog).values({ at: 1, actor: "op", action: "in-tx", target: "fleet", before: null, after: null });
    })
    .then(
      () => settled.push("transaction"),
      (error: unknown) => settled.push(`transaction failed: ${String(error)}`),
    );
  // Timers keep firing while both wait (better-sqlite3 used to sit in SQLite's busy handler,
  // synchronously, for busy_timeout = 5 s: no timer, request or lease renewal ran meanwhile).
  let longestGapMs = 0;
  for (let turn = 0, last = performance.now(); turn < 20; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    longestGapMs = Math.max(longestGapMs, performance.now() - last);
    last = performance.now();
  }
  assert.deepEqual(settled, [], "both still wait for the lock");
  assert.ok(longestGapMs < 1_000, `the event loop stood still for ${Math.round(longestGapMs)} ms`);
  lock.release();
  await Promise.all([lone, transaction]);
  assert.deepEqual(settled, ["lone", "transaction"]);
  assert.deepEqual(
    (await store.db.select().from(regions)).map((r) => r.id),
    ["lone"],
  );
  assert.deepEqual(
    (await store.db.select().from(auditLog)).map((r) => r.action),
    ["in-tx"],
  );
  db.$client.close();
});

test("a lock held past the store's wait fails the write and the transaction with SQLITE_BUSY, saying so; the transaction's work never ran", async () => {
  const db = openDb(join(dir, "held.db"));
  migrate(db);
  const store = sqliteStore(db, { busyWaitMs: 150 });
  const lock = lockedByAnotherProcess("held");
  const refused = (error: unknown) =>
    (error as { code?: unknown }).code === "SQLITE_BUSY" && /stayed locked by another process for \d+ ms/.test((error as Error).message);
  try {
    await assert.rejects(store.db.insert(store.tables.regions).values({ id: "r", name: "r", createdAt: 1 }), refused);
    let ran = false;
    await assert.rejects(
      store.transaction(async () => {
        ran = true;
      }),
      refused,
    );
    assert.equal(ran, false);
  } finally {
    lock.release();
  }
  await store.db.insert(store.tables.regions).values({ id: "r", name: "r", createdAt: 1 });
  assert.equal((await store.db.select().from(store.tables.regions)).length, 1, "the store works once the lock is free");
  db.$client.close();
});

test("a transaction that SQLite rolled back itself (disk full) fails with SQLite's error, not the ROLLBACK's", async () => {
  const { db, store } = freshStore("full");
  const pages = db.$client.pragma("page_count", { simple: true }) as number;
  db.$client.pragma(`max_page_count = ${pages}`); // as full a disk would be
  const { regions } = store.tables;
  const error = await store
    .transaction(async (tx) => {
      await tx.db.select().from(tx.tables.regions);
      await tx.db.insert(tx.tables.regions).values({ id: "big", name: "x".repeat(200_000), createdAt: 1 });
    })
    .then(
      () => assert.fail("the insert fit"),
      (caught: unknown) => caught as Error & { code?: string; cause?: { code?: string } },
    );
  assert.equal(error.code ?? error.cause?.code, "SQLITE_FULL", String(error));
  assert.doesNotMatch(error.message, /ROLLBACK/);
  assert.equal(db.$client.inTransaction, false);
  db.$client.pragma(`max_page_count = ${pages * 100}`);
  await store.transaction(async (tx) => {
    await tx.db.insert(tx.tables.regions).values({ id: "small", name: "small", createdAt: 1 });
  });
  assert.deepEqual(
    (await store.db.select().from(regions)).map((r) => r.id),
    ["small"],
  );
  db.$client.close();
});

test("writes queued behind each other during another process's lock each fail within one wait of being made", async () => {
  const path = join(dir, "queued-busy.db");
  const db = openDb(path);
  migrate(db);
  const store = sqliteStore(db, { busyWaitMs: 300 });
  const other = openDb(path);
  other.$client.exec("BEGIN IMMEDIATE"); // another process holds the write lock throughout
  const started = performance.now();
  const failedAfter = await Promise.all(
    [1, 2, 3, 4].map((i) =>
      store.db
        .insert(store.tables.regions)
        .values({ id: `q${i}`, name: `q${i}`, createdAt: i })
        .then(
          () => Number.NaN,
          () => performance.now() - started,
        ),
    ),
  );
  other.$client.exec("ROLLBACK");
  other.$client.close();
  db.$client.close();
  // Each wait counted from its own start: the fourth used to fail after four waits (1,159 ms).
  for (const ms of failedAfter) assert.ok(ms < 600, `failed after ${failedAfter.map(Math.round).join(", ")} ms with a wait of 300 ms`);
});
