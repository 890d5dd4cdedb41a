// An operator's tuner change is saved with its run, then written to the LB's row and published. When
// that second part fails (the database refused the LB row's write: a trigger here, on either store),
// the operator is told the change may be saved, and the leader's next reconcile round (every lease
// renewal, 1.5 s) publishes it: the LB gets the weights without another action. Before, the round
// reloaded only runs another console had written, so these weights waited for the next change.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { desc, eq, sql } from "drizzle-orm";
import type { LbConfig } from "@meridian/protocol";
import { isChangeMaybeSaved } from "../services/after-commit";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { setManualWeights, tunerByLb } from "../services/tuner";
import { createHarness, type Harness, OPERATOR } from "../testing/harness";

const LB = "lb-a";
let h: Harness;

/** Makes every write of an LB row's weights fail until the returned function is called. */
async function refuseWeightWrites(): Promise<() => Promise<void>> {
  const { database } = h;
  if (database.dialect === "sqlite") {
    database.db.run(sql`create trigger no_weights before update of weight_rtt on load_balancers begin select raise(abort, 'weights refused'); end`);
    return async () => void database.db.run(sql`drop trigger no_weights`);
  }
  await database.db.execute(sql`create function no_weights() returns trigger language plpgsql as $$ begin raise exception 'weights refused'; end $$`);
  await database.db.execute(sql`create trigger no_weights before update of weight_rtt on load_balancers for each row execute function no_weights()`);
  return async () => {
    await database.db.execute(sql`drop trigger no_weights on load_balancers`);
    await database.db.execute(sql`drop function no_weights()`);
  };
}

/** The LB's latest recorded config. */
async function latestConfig(): Promise<LbConfig> {
  const { db, tables } = h.rt.store;
  const [row] = await db.select().from(tables.lbConfigs).where(eq(tables.lbConfigs.lbId, LB)).orderBy(desc(tables.lbConfigs.version)).limit(1);
  assert.ok(row, "the LB has a config version");
  return JSON.parse(row.json) as LbConfig;
}

before(async () => {
  h = await createHarness();
  await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
  await createLb(h.rt, OPERATOR, { name: LB, url: "http://127.0.0.1:1", region: "us-ashburn" });
  await h.rt.tuners.start();
});
after(async () => await h?.close());

test("manual weights whose publish failed are published by the leader's next round", async () => {
  const weights = { rtt: 1.25, queue: 0.3 };
  const allow = await refuseWeightWrites();
  try {
    await assert.rejects(setManualWeights(h.rt, OPERATOR, { lbId: LB, weights }), (error: unknown) => {
      assert.ok(isChangeMaybeSaved(error), String(error));
      return true;
    });
  } finally {
    await allow();
  }
  assert.notDeepEqual((await latestConfig()).weights, weights, "not published yet");

  // One reconcile round, as the leader's timer runs it (runtime.ts).
  await h.rt.tuners.reconcile();
  await h.rt.publisher.publishAll();

  const published = await latestConfig();
  assert.deepEqual(published.weights, weights);
  const shown = await tunerByLb(h.rt, { lbId: LB });
  assert.deepEqual(shown.weights, weights);
  assert.equal(shown.boundVersion, published.version, "the tuner is bound to the version that carries its weights");
});
