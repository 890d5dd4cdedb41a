// Two electors on one database (SQLite file, and a real PostgreSQL server started here), driven
// round by round with a test clock: one leader at a time, takeover after expiry with a higher term,
// immediate takeover after a release, and fenced writes from a deposed leader refused. And on the
// database server's clock, which the lease uses outside these tests: consoles whose own clocks are
// an hour off neither take a live lease nor wait out a dead leader.
import { strict as assert } from "node:assert";
import { describe, test } from "node:test";
import { and, eq, sql } from "drizzle-orm";
import pino from "pino";
import { createDatabase, type Database, databaseNowMs } from "@meridian/db";
import { storesForTests } from "@meridian/db/testing/postgres-server";
import { whileLeading } from "./fence";
import { LeaderElector } from "./leader-elector";

const both = storesForTests("meridian-leader");

const timing = { ttlMs: 6_000, renewEveryMs: 1_500 };

/** An elector whose own clock and lease clock are the test's `clock`; `skewMs` instead keeps the
 * lease on the database's clock and sets this console's own clock that far off the real time. */
function elector(database: Database, id: string, clock: { now: number } | { skewMs: number }, events: string[]) {
  const clocks = "now" in clock ? { now: () => clock.now, leaseNow: () => clock.now } : { now: () => Date.now() + clock.skewMs };
  return new LeaderElector({
    store: database.store,
    log: pino({ level: "silent" }),
    self: { id, url: `http://${id}` },
    timing,
    ...clocks,
    onElected: (term) => events.push(`${id} elected ${term}`),
    onDeposed: (term) => events.push(`${id} deposed ${term}`),
  });
}

const stores: { name: string; open: (id: string) => Promise<[Database, Database]> }[] = [
  {
    name: "sqlite",
    open: async (id) => {
      const path = both.sqlitePath(id);
      return [createDatabase({ sqlitePath: path }), createDatabase({ sqlitePath: path })];
    },
  },
  {
    name: "postgres",
    open: async (id) => {
      const url = await both.postgresUrl(id);
      return [createDatabase({ DATABASE_URL: url, sqlitePath: "" }), createDatabase({ DATABASE_URL: url, sqlitePath: "" })];
    },
  },
];

for (const { name, open } of stores) {
  describe(`leadership on ${name}`, async () => {
    test("one leader at a time; the other takes over with a higher term once the lease expires", async () => {
      const [dbA, dbB] = await open(`${name}_expiry`);
      await dbA.migrate();
      const clock = { now: 1_000_000 };
      const events: string[] = [];
      const a = elector(dbA, "a", clock, events);
      const b = elector(dbB, "b", clock, events);
      await Promise.all([a.tick(), b.tick()]);
      assert.equal([a.view().isLeader, b.view().isLeader].filter(Boolean).length, 1, "exactly one leader");
      const [leader, follower] = a.view().isLeader ? [a, b] : [b, a];
      assert.equal(follower.view().leader, leader.view().self, "the follower sees who leads");
      assert.equal(follower.view().leaderUrl, `http://${leader.view().self}`);
      const firstTerm = leader.currentTerm();
      assert.equal(firstTerm, 1);
      // The leader keeps renewing: the follower never takes over.
      for (let i = 0; i < 6; i++) {
        clock.now += timing.renewEveryMs;
        await leader.tick();
        await follower.tick();
        assert.equal(leader.currentTerm(), 1);
        assert.equal(follower.currentTerm(), null);
      }
      // The leader dies (no more renewals): it would stop acting as leader on its own before the
      // follower may take over, and the follower takes over once the lease expired.
      clock.now += timing.ttlMs - timing.renewEveryMs;
      assert.equal(leader.currentTerm(), null, "a leader that cannot renew steps down in time");
      await follower.tick();
      assert.equal(follower.currentTerm(), null, "not before the lease expired");
      clock.now += timing.renewEveryMs;
      await follower.tick();
      assert.equal(follower.currentTerm(), 2, "taken over with the next term");
      // The old leader comes back: it follows.
      await leader.tick();
      assert.equal(leader.view().isLeader, false);
      assert.equal(leader.view().term, 2);
      const who = leader.view().self;
      const other = follower.view().self;
      assert.deepEqual(events, [`${who} elected 1`, `${who} deposed 1`, `${other} elected 2`]);
      await Promise.all([dbA.close(), dbB.close()]);
    });

    test("a leader that stops releases the lease: the other takes over on its next round", async () => {
      const [dbA, dbB] = await open(`${name}_release`);
      await dbA.migrate();
      const clock = { now: 5_000_000 };
      const events: string[] = [];
      const a = elector(dbA, "a", clock, events);
      const b = elector(dbB, "b", clock, events);
      await a.tick();
      await b.tick();
      assert.equal(a.currentTerm(), 1);
      await a.stop();
      assert.equal(a.currentTerm(), null);
      clock.now += 1;
      await b.tick();
      assert.equal(b.currentTerm(), 2);
      assert.deepEqual(events, ["a elected 1", "a deposed 1", "b elected 2"]);
      await Promise.all([dbA.close(), dbB.close()]);
    });

    test("a stopped elector started again takes no lease: the other takes over, and it never leads without onElected", async () => {
      const [dbA, dbB] = await open(`${name}_restart`);
      await dbA.migrate();
      const clock = { now: 7_000_000 };
      const events: string[] = [];
      const a = elector(dbA, "a", clock, events);
      const b = elector(dbB, "b", clock, events);
      await a.tick();
      await a.stop();
      // A shutting-down console's next request (getRuntime({ start: true })) starts it again.
      a.start();
      clock.now += 1;
      await a.tick();
      await b.tick();
      assert.equal(a.currentTerm(), null, "the stopped elector does not lead");
      assert.equal(b.currentTerm(), 2, "the other console takes over at once");
      assert.deepEqual(events, ["a elected 1", "a deposed 1", "b elected 2"]);
      await a.stop();
      await b.stop();
      await Promise.all([dbA.close(), dbB.close()]);
    });

    test("on the database's clock, a console an hour ahead does not take a live lease, nor one an hour behind wait out a dead one", async () => {
      const [dbA, dbB] = await open(`${name}_skew`);
      await dbA.migrate();
      const events: string[] = [];
      const hour = 3_600_000;
      const a = elector(dbA, "a", { skewMs: 0 }, events);
      const ahead = elector(dbB, "ahead", { skewMs: hour }, events);
      await a.tick();
      assert.equal(a.currentTerm(), 1);
      await ahead.tick();
      assert.equal(ahead.currentTerm(), null, "the lease a renewed a moment ago is live, whatever this console's clock says");
      assert.equal(ahead.view().leader, "a");
      // a dies and its lease runs out: expired a millisecond ago on the database's clock (not
      // released, which any clock would see), without waiting the ttl out.
      const { db, tables } = dbA.store;
      await db
        .update(tables.consoleLeases)
        .set({ expiresAt: sql`${databaseNowMs(dbA.store.dialect)} - 1` })
        .where(eq(tables.consoleLeases.name, "console"));
      const behind = elector(dbB, "behind", { skewMs: -hour }, events);
      await behind.tick();
      assert.equal(behind.currentTerm(), 2, "an expired lease is taken at once, however far this console's clock lags");
      assert.deepEqual(events, ["a elected 1", "behind elected 2"]);
      await Promise.all([dbA.close(), dbB.close()]);
    });

    test("a write fenced with a deposed leader's term changes nothing; the new leader's does", async () => {
      const [dbA, dbB] = await open(`${name}_fence`);
      await dbA.migrate();
      const clock = { now: 9_000_000 };
      const a = elector(dbA, "a", clock, []);
      const b = elector(dbB, "b", clock, []);
      await a.tick();
      const { db, tables } = dbA.store;
      await db.insert(tables.regions).values({ id: "us", name: "us", createdAt: 1 });
      await db.insert(tables.loadBalancers).values({ id: "lb", name: "lb", url: "http://lb", regionId: "us", createdAt: 1 });
      const bump = async (database: Database, term: number, version: number) =>
        database.store.db
          .update(database.store.tables.loadBalancers)
          .set({ configVersion: version })
          .where(and(eq(database.store.tables.loadBalancers.id, "lb"), whileLeading(database.store.tables.consoleLeases, term)))
          .returning();
      assert.equal((await bump(dbA, 1, 1)).length, 1, "the leader's write lands");
      clock.now += timing.ttlMs + 1;
      await b.tick();
      assert.equal(b.currentTerm(), 2);
      assert.equal((await bump(dbA, 1, 99)).length, 0, "the deposed leader's write is refused");
      assert.equal((await bump(dbB, 2, 2)).length, 1);
      const [lb] = await db.select().from(tables.loadBalancers);
      assert.equal(lb?.configVersion, 2);
      await Promise.all([dbA.close(), dbB.close()]);
    });
  });
}
