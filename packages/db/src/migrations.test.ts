// Upgrading a database that holds data: each migration that rebuilds a table keeps the rows of the
// tables around it. Run: node --import tsx --test packages/db/src/migrations.test.ts
import { strict as assert } from "node:assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { eq } from "drizzle-orm";
import { loadBalancers, migrate, openDb, regions, tunerRuns, tunerSteps } from "./index";
import { migrationsUpTo } from "./testing/migrations-up-to";

const dir = mkdtempSync(join(tmpdir(), "meridian-migrations-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("the fleet-scope migration keeps every tuner run and step, and a fleet run (no LB) can then be stored", () => {
  const db = openDb(join(dir, "upgrade.db"));
  migrate(db, migrationsUpTo(dir, "0005_experiment_runner"));
  db.insert(regions).values({ id: "us", name: "us", createdAt: 1 }).run();
  // In SQL: the table as 0005 left it lacks columns that today's schema inserts.
  db.$client.prepare("INSERT INTO load_balancers (id, name, url, region_id, created_at) VALUES ('lb-us', 'lb-us', 'http://x', 'us', 1)").run();
  const run = { lbId: "lb-us", mode: "online", running: true, settingsJson: "{}", stateJson: "{}", startedAt: 1, updatedAt: 7 } as const;
  db.insert(tunerRuns).values(run).run();
  const step = { runId: 1, weightRtt: 1, weightQueue: 0.1, sigma: 1, accepted: true, kind: "trial", at: 5, trialJson: '{"decision":"accept"}' } as const;
  db.insert(tunerSteps)
    .values([
      { ...step, step: 1 },
      { ...step, step: 2 },
    ])
    .run();

  migrate(db);

  assert.deepEqual(
    db.select({ lbId: tunerRuns.lbId, updatedAt: tunerRuns.updatedAt }).from(tunerRuns).all(),
    [{ lbId: "lb-us", updatedAt: 7 }],
    "the LB's run is kept",
  );
  assert.deepEqual(
    db.select({ step: tunerSteps.step, trialJson: tunerSteps.trialJson }).from(tunerSteps).all(),
    [
      { step: 1, trialJson: '{"decision":"accept"}' },
      { step: 2, trialJson: '{"decision":"accept"}' },
    ],
    "its steps are kept",
  );
  assert.deepEqual(db.$client.pragma("foreign_key_check"), []);
  // The steps still belong to the runs table by foreign key: deleting the LB deletes its run and steps.
  db.insert(tunerRuns)
    .values({ ...run, lbId: null })
    .run();
  assert.throws(
    () =>
      db
        .insert(tunerSteps)
        .values({ ...step, runId: 99, step: 1 })
        .run(),
    /FOREIGN KEY/,
  );
  db.delete(loadBalancers).where(eq(loadBalancers.id, "lb-us")).run();
  assert.deepEqual(db.select({ lbId: tunerRuns.lbId }).from(tunerRuns).all(), [{ lbId: null }], "the fleet's run stays");
  assert.equal(db.select().from(tunerSteps).all().length, 0);
  db.$client.close();
});
