// Automatic failback's healthy period on a console that follows for a while: every console tracks
// each LB's run of healthy probes, and only the leader fails back. The run used to be fed only while
// leading, so a console deposed while an LB died never saw it fail: elected again, it counted the
// period from before the failure and failed the LB back after a single healthy probe, and while
// following its LBs page showed a failback time for an LB that did not answer.
import { strict as assert } from "node:assert";
import { after, beforeEach, describe, test } from "node:test";
import { eq } from "drizzle-orm";
import pino from "pino";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createHarness, type Harness, OPERATOR, waitFor } from "../testing/harness";
import { AutoFailback } from "./auto-failback";
import { HealthMonitor } from "./health-monitor";
import { LbHealthBook } from "./lb-health";

/** One console's monitor over lb-x and lb-y; `world` says whether it leads and whether lb-x answers. */
function monitorOf(h: Harness, healthyForMs: number) {
  const world = { leading: true, lbxAnswers: true };
  const failbacks: { lbId: string; healthyForMs: number | undefined }[] = [];
  const log = pino({ level: "silent" });
  const book = new LbHealthBook();
  const autoFailback = new AutoFailback({
    log,
    healthyForMs,
    failover: {
      failback: async (lbId, _actor, options) => {
        failbacks.push({ lbId, healthyForMs: options?.healthyForMs });
        return { lbId, targetLbId: lbId, movedReplicas: [], movedEntrypoints: [] };
      },
    },
  });
  const monitor = new HealthMonitor({
    acting: () => world.leading,
    store: h.rt.store,
    log,
    lbClient: {
      health: async (lb) => (lb.id !== "lb-x" || world.lbxAnswers ? { ok: true, error: null } : { ok: false, error: "ECONNREFUSED" }),
      state: async () => ({ state: null, error: null }),
    },
    book,
    publisher: { onReportedVersion: async () => undefined, publishAll: async () => undefined },
    telemetry: { sync: async () => undefined },
    failover: { failover: async (lbId) => ({ lbId, targetLbId: "lb-y", movedReplicas: [], movedEntrypoints: [] }) },
    autoFailback,
    entrypoints: { resolve: async () => [] },
    replicaWarnings: { report: () => undefined },
    intervalMs: 60_000,
    failoverAfter: 2,
    autoFailover: true,
  });
  return { world, failbacks, book, autoFailback, monitor };
}

describe("automatic failback on a console that followed while the LB was down", () => {
  let h: Harness;
  const lbx = async () => (await h.rt.store.db.select().from(h.rt.store.tables.loadBalancers).where(eq(h.rt.store.tables.loadBalancers.id, "lb-x")))[0]!;
  /** What the leading console (another one) does after lb-x failed its probes. */
  const failedOverElsewhere = () =>
    h.rt.store.db
      .update(h.rt.store.tables.loadBalancers)
      .set({ state: "failed-over", failedOverTo: "lb-y", failedOverAutomatically: true })
      .where(eq(h.rt.store.tables.loadBalancers.id, "lb-x"));

  beforeEach(async () => {
    await h?.close();
    h = await createHarness();
    await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
    await createLb(h.rt, OPERATOR, { name: "lb-x", url: "http://127.0.0.1:9", region: "us-ashburn" }, "lb-x");
    await createLb(h.rt, OPERATOR, { name: "lb-y", url: "http://127.0.0.1:10", region: "us-ashburn" }, "lb-y");
  });
  after(async () => {
    await h?.close();
  });

  test("the healthy period counts from the LB's recovery, not from before it died while this console followed", async () => {
    const PERIOD = 30_000;
    const { world, failbacks, book, autoFailback, monitor } = monitorOf(h, PERIOD);
    // Leading: lb-x answers.
    await monitor.tick();
    // Deposed; lb-x dies, and the console now leading fails it over.
    world.leading = false;
    world.lbxAnswers = false;
    await monitor.tick();
    await monitor.tick();
    await failedOverElsewhere();
    assert.equal(autoFailback.dueAt(await lbx()), null, "no failback time is shown while the LB does not answer");

    // lb-x answers again while this console still follows.
    world.lbxAnswers = true;
    await monitor.tick();
    const recoveredAt = book.lb("lb-x")?.lastProbeAt;
    assert.ok(recoveredAt);
    assert.equal(autoFailback.dueAt(await lbx()), recoveredAt + PERIOD, "the period counts from the first healthy probe after the failures");

    // Elected again: one more healthy probe is not a healthy period.
    world.leading = true;
    await monitor.tick();
    assert.deepEqual(failbacks, [], "not failed back");
    assert.equal(autoFailback.dueAt(await lbx()), recoveredAt + PERIOD);
  });

  test("a follower only tracks the run; elected, it fails back on the run it saw", async () => {
    const PERIOD = 1;
    const { world, failbacks, book, autoFailback, monitor } = monitorOf(h, PERIOD);
    world.leading = false;
    world.lbxAnswers = false;
    await monitor.tick();
    await failedOverElsewhere();
    world.lbxAnswers = true;
    await monitor.tick();
    const recoveredAt = book.lb("lb-x")?.lastProbeAt;
    assert.ok(recoveredAt);
    const dueAt = autoFailback.dueAt(await lbx());
    assert.equal(dueAt, recoveredAt + PERIOD);
    await waitFor(async () => {
      await monitor.tick();
      return book.lb("lb-x")!.lastProbeAt! >= dueAt!;
    });
    assert.deepEqual(failbacks, [], "a follower does not fail back");

    world.leading = true;
    await monitor.tick();
    const probedAt = book.lb("lb-x")?.lastProbeAt;
    assert.ok(probedAt);
    assert.deepEqual(failbacks, [{ lbId: "lb-x", healthyForMs: probedAt - recoveredAt }], "failed back once, on the run since the recovery");
  });
});
