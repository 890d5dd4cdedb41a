// Every tuner action an operator makes is in the audit log: its row is written in the transaction
// that saves the change. With the audit row refused (a trigger on audit_log, on either store), the
// action answers an error and saves nothing, neither in the database nor in the leader's copy of the
// tuner; allowed, the change is saved with one row holding the tuner before and after it. (Written
// after the commit, a refused row left the change saved and only an error line to say so.)
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { sql } from "drizzle-orm";
import { DomainError } from "../errors";
import { currentRun } from "../runtime/tuner-runs";
import { createHarness, type Harness, OPERATOR } from "../testing/harness";
import { isChangeMaybeSaved } from "./after-commit";
import { listAudit } from "./audit";
import { createLb } from "./lbs";
import { createRegion } from "./regions";
import { fleetTuner, resetTuner, setManualWeights, setTunerScope, startTuner, stopTuner, tunerByLb, tunerScope, updateTuner } from "./tuner";

/** Makes every insert into audit_log fail until the returned function is called. */
async function refuseAuditRows(h: Harness): Promise<() => Promise<void>> {
  const { database } = h;
  if (database.dialect === "sqlite") {
    database.db.run(sql`create trigger no_audit before insert on audit_log begin select raise(abort, 'audit refused'); end`);
    return async () => void database.db.run(sql`drop trigger no_audit`);
  }
  await database.db.execute(sql`create function no_audit() returns trigger language plpgsql as $$ begin raise exception 'audit refused'; end $$`);
  await database.db.execute(sql`create trigger no_audit before insert on audit_log for each row execute function no_audit()`);
  return async () => {
    await database.db.execute(sql`drop trigger no_audit on audit_log`);
    await database.db.execute(sql`drop function no_audit()`);
  };
}

/** The error's messages, its causes' included (drizzle wraps the driver's error). */
function messages(error: unknown): string {
  const parts: string[] = [];
  for (let e = error; e instanceof Error; e = e.cause) parts.push(e.message);
  return parts.join(" <- ");
}

/** What an audit row records of a tuner, read off what its page shows. */
function recorded(shown: Awaited<ReturnType<typeof tunerByLb>>) {
  const { mode, running, weights, bounds, window, hop, evaluation, trialSettings, guardrails } = shown;
  return { mode, running, weights, bounds, window, hop, evaluation, trial: trialSettings, guardrails };
}

describe("tuner actions and their audit rows", () => {
  let h: Harness;

  before(async () => {
    h = await createHarness();
    await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
    await createLb(h.rt, OPERATOR, { name: "lb-a", url: "http://127.0.0.1:1", region: "us-ashburn" });
    await createLb(h.rt, OPERATOR, { name: "lb-b", url: "http://127.0.0.1:2", region: "us-ashburn" });
    await h.rt.tuners.start();
  });
  after(async () => await h.close());

  /** The LB's tuner as its page shows it (the leader's copy) and as its run stores it. */
  async function lbTuner(lbId: string) {
    const run = await currentRun(h.rt.store, lbId);
    return {
      shown: recorded(await tunerByLb(h.rt, { lbId })),
      stored: { runId: run?.id, running: run?.running, mode: run?.mode, settings: run?.settingsJson },
    };
  }

  /** Runs `action` with audit rows refused: it fails, as the database's error, and `seen` is as it was. */
  async function refusedSavesNothing(action: () => Promise<void>, seen: () => Promise<unknown>): Promise<void> {
    const was = await seen();
    const allow = await refuseAuditRows(h);
    try {
      await assert.rejects(action(), (error: unknown) => {
        assert.ok(!(error instanceof DomainError) && !isChangeMaybeSaved(error), `answered as nothing saved: ${messages(error)}`);
        assert.match(messages(error), /audit refused/);
        return true;
      });
    } finally {
      await allow();
    }
    assert.deepEqual(await seen(), was, "nothing was saved");
  }

  /** The audit rows of `action`, newest first. */
  const rowsOf = async (action: string) => (await listAudit(h.rt, { action })).filter((row) => row.action === action);

  const lbCases: { action: string; run: () => Promise<void> }[] = [
    { action: "tuner.update", run: () => updateTuner(h.rt, OPERATOR, { lbId: "lb-a", guardrails: { maxErrorRate: 0.2 } }) },
    { action: "tuner.start", run: () => startTuner(h.rt, OPERATOR, { lbId: "lb-a" }) },
    { action: "tuner.stop", run: () => stopTuner(h.rt, OPERATOR, { lbId: "lb-a" }) },
    { action: "tuner.set-manual", run: () => setManualWeights(h.rt, OPERATOR, { lbId: "lb-a", weights: { rtt: 2, queue: 0.5 } }) },
    { action: "tuner.reset", run: () => resetTuner(h.rt, OPERATOR, { lbId: "lb-a" }) },
  ];
  for (const { action, run } of lbCases) {
    test(`${action}: refused audit row, nothing saved; allowed, the change is saved with its row`, async () => {
      await refusedSavesNothing(run, () => lbTuner("lb-a"));
      assert.equal((await rowsOf(action)).length, 0);
      const was = await lbTuner("lb-a");
      await run();
      const now = await lbTuner("lb-a");
      assert.notDeepEqual(now, was, "the change is saved");
      const rows = await rowsOf(action);
      assert.equal(rows.length, 1);
      assert.deepEqual([rows[0]!.actor, rows[0]!.target], [OPERATOR.username, "lb:lb-a"]);
      assert.deepEqual(rows[0]!.before, was.shown, "the row holds the tuner before the change");
      assert.deepEqual(rows[0]!.after, now.shown, "and after it");
    });
  }

  /** The scope, and whether lb-b's own tuner runs (a switch to fleet stops it). */
  const scopeSeen = async () => ({ scope: (await tunerScope(h.rt)).scope, lbB: await lbTuner("lb-b") });

  test("tuner.scope to fleet, tuner.start of the fleet's tuner, tuner.scope back: each saved with its row or not at all", async () => {
    await startTuner(h.rt, OPERATOR, { lbId: "lb-b" });
    await refusedSavesNothing(() => setTunerScope(h.rt, OPERATOR, { scope: "fleet" }), scopeSeen);
    assert.equal((await scopeSeen()).lbB.stored.running, true, "the switch that was not saved stopped no LB's tuner");
    await setTunerScope(h.rt, OPERATOR, { scope: "fleet" });
    assert.deepEqual([(await scopeSeen()).scope, (await scopeSeen()).lbB.stored.running], ["fleet", false]);
    assert.deepEqual(
      (await rowsOf("tuner.scope")).map((row) => [row.target, row.before, row.after]),
      [["fleet", { scope: "lb" }, { scope: "fleet" }]],
    );

    const fleet = async () => recorded(await fleetTuner(h.rt));
    await refusedSavesNothing(() => startTuner(h.rt, OPERATOR, { fleet: true }), fleet);
    await startTuner(h.rt, OPERATOR, { fleet: true });
    assert.equal((await fleet()).running, true);
    assert.deepEqual(
      (await rowsOf("tuner.start")).filter((row) => row.target === "fleet").map((row) => [(row.before as { running: boolean }).running, row.after]),
      [[false, await fleet()]],
    );

    await refusedSavesNothing(
      () => setTunerScope(h.rt, OPERATOR, { scope: "lb" }),
      async () => ({ ...(await scopeSeen()), fleet: await fleet() }),
    );
    await setTunerScope(h.rt, OPERATOR, { scope: "lb" });
    assert.equal((await scopeSeen()).scope, "lb");
    assert.deepEqual(
      (await rowsOf("tuner.scope")).map((row) => [row.before, row.after]),
      [
        [{ scope: "fleet" }, { scope: "lb" }],
        [{ scope: "lb" }, { scope: "fleet" }],
      ],
    );
  });
});
