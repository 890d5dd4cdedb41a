// PostgreSQL whose connections go silent without a reset (its host died, a firewall or NAT dropped
// the connections' state): the pool's connections stay open and nothing answers until the kernel
// gives up (~15 min). A query on one used to wait that long, and the leader's lease round with it.
// The "network" is a loopback proxy in front of a throwaway server (started here, stopped by PID):
// `silence()` stops forwarding on every connection open now, without closing any; new ones work.
// Run: node --import tsx --test packages/db/src/database.test.ts
import { strict as assert } from "node:assert";
import { connect, createServer, type Server, type Socket } from "node:net";
import { after, before, test } from "node:test";
import type pg from "pg";
import { createDatabase, type Database } from "./database";
import { type PostgresServer, startPostgres } from "./testing/postgres-server";

let server: PostgresServer;
let proxy: Server;
const connections: { client: Socket; upstream: Socket; silent: boolean }[] = [];
let database: Database;

before(async () => {
  server = await startPostgres();
  proxy = createServer((client) => {
    const upstream = connect(server.port, "127.0.0.1");
    const pair = { client, upstream, silent: false };
    connections.push(pair);
    client.on("data", (data) => {
      if (!pair.silent) upstream.write(data);
    });
    upstream.on("data", (data) => {
      if (!pair.silent) client.write(data);
    });
    client.on("error", () => undefined);
    upstream.on("error", () => undefined);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const url = new URL(await server.createDatabase("silent_network"));
  url.port = String((proxy.address() as { port: number }).port);
  database = createDatabase({ DATABASE_URL: url.toString(), sqlitePath: "unused" });
  await database.migrate();
});

after(async () => {
  for (const { client, upstream } of connections) {
    client.destroy();
    upstream.destroy();
  }
  await database?.close().catch(() => undefined);
  proxy?.close();
  await server?.stop();
});

/** Every connection open now goes silent: what it sends is lost, and nothing comes back. */
function silence(): void {
  for (const pair of connections) pair.silent = true;
}

/** What `promise` came to, or "never settled" after `withinMs` (a generous bound: the wait it
 * guards against is ~15 min). */
async function outcome(promise: Promise<unknown>, withinMs = 30_000): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve("never settled"), withinMs);
  });
  const settled = promise.then(
    () => "answered",
    (error: unknown) => `failed: ${String((error as Error).cause ?? error)}`, // the driver's error (drizzle wraps it)
  );
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}

const pool = () => (database.db as { $client: pg.Pool }).$client;

test("a query on a connection gone silent fails instead of waiting for the kernel, and the next one gets a working connection", async () => {
  const { db, tables } = database.store;
  await db.select().from(tables.regions);
  assert.equal(pool().totalCount, 1, "one pooled connection, idle");
  silence();
  assert.match(await outcome(db.select().from(tables.regions)), /^failed: .*timeout/i);
  await db.insert(tables.regions).values({ id: "us", name: "us", createdAt: 1 });
  assert.deepEqual(
    (await db.select().from(tables.regions)).map((r) => r.id),
    ["us"],
  );
  assert.equal(pool().options.keepAlive, true, "idle connections are probed (TCP keepalive)");
});

test("a transaction whose connection went silent fails, rolls nothing in, and its connection is not handed out again", async () => {
  const { store } = database;
  const doomed = store.transaction(async (tx) => {
    await tx.db.select().from(tx.tables.regions);
    silence(); // the network fails mid-transaction
    await tx.db.insert(tx.tables.regions).values({ id: "lost", name: "lost", createdAt: 1 });
  });
  assert.match(await outcome(doomed), /^failed: .*timeout/i);
  // The next transaction and query run on a new connection (the silent one was closed, not pooled).
  await store.transaction(async (tx) => {
    await tx.db.insert(tx.tables.regions).values({ id: "eu", name: "eu", createdAt: 2 });
  });
  assert.deepEqual((await store.db.select().from(store.tables.regions)).map((r) => r.id).sort(), ["eu", "us"]);
});
