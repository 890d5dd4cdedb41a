// The tuner run's revision fence: a console that writes a copy of the run older than the database's
// is refused (RunMoved) and records nothing, whoever it is. A follower's write of an operator's
// change (term 0) is fenced the same way as the leader's, so it cannot write over a step the leader
// recorded after the follower read the run. Resets of one LB at once leave one open run, and a reset
// moves the ended run's revision, so a leader still stepping that run records nothing into it.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { eq, isNull } from "drizzle-orm";
import { EsTuner, type TunerState, type TunerStep } from "@meridian/tuner";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { startTuner, stopTuner } from "../services/tuner";
import { createHarness, OPERATOR, type Harness } from "../testing/harness";
import { currentRun, newRun, type PersistedTuner, persistRun, RunMoved } from "./tuner-runs";
import { settingsOf } from "./tuner-settings";

const LB = "lb-a";
let h: Harness;

before(async () => {
  h = await createHarness();
  await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
  await createLb(h.rt, OPERATOR, { name: LB, url: "http://127.0.0.1:9", region: "us-ashburn" });
  await h.rt.tuners.describe(LB);
});

after(async () => {
  await h?.close();
});

/** The run as a console reads it: its own copy of the tuner, at the revision it read. */
async function readRun(): Promise<PersistedTuner> {
  const run = await currentRun(h.rt.store, LB);
  assert.ok(run?.stateJson, "the LB has an open run");
  const tuner = EsTuner.restore(JSON.parse(run.stateJson) as TunerState);
  return { runId: run.id, tuner, running: run.running, settings: settingsOf(tuner.state().config), writtenAt: run.updatedAt };
}

test("a follower's write of a copy older than the run is refused, and the newer write stays", async () => {
  const leader = await readRun();
  const follower = await readRun();
  // The leader records a change first (term 0 here: the fence under test is the revision's).
  leader.tuner.setManualWeights({ rtt: 2, queue: 0.2 });
  leader.writtenAt = await persistRun(h.rt.store, leader, null, 0, Date.now());
  // The follower, which read the run before that write, records an operator's stop.
  follower.running = false;
  follower.tuner.setMode("static");
  await assert.rejects(persistRun(h.rt.store, follower, null, 0, Date.now()), RunMoved);

  const stored = await readRun();
  assert.equal(stored.writtenAt, leader.writtenAt, "the run is at the leader's revision");
  assert.equal(stored.tuner.mode, "manual", "the leader's change was not written over");
  assert.deepEqual(stored.tuner.current().weights, { rtt: 2, queue: 0.2 });

  // Read again, the follower's change goes through, and moves the revision on.
  const fresh = await readRun();
  fresh.tuner.setMode("static");
  const revision = await persistRun(h.rt.store, fresh, null, 0, Date.now());
  assert.ok(revision > leader.writtenAt);
  assert.equal((await readRun()).tuner.mode, "static");
});

test("two resets of one LB at the same moment leave one open run", async () => {
  const reset = () => newRun(h.rt.store, { lbId: LB, weights: { rtt: 0.5, queue: 0.1 }, settings: null, running: false, seed: () => 1 }, Date.now());
  for (let round = 0; round < 5; round += 1) {
    await Promise.all([reset(), reset(), reset()]);
    const { db, tables } = h.rt.store;
    const open = await db.select().from(tables.tunerRuns).where(isNull(tables.tunerRuns.endedAt));
    assert.equal(open.length, 1, `round ${round}: ${open.length} open runs`);
  }
});

test("an operator's change that races another console's write is made again on the run as it now stands, not refused", async () => {
  await startTuner(h.rt, OPERATOR, { lbId: LB });
  // Between the service's read of the run and its write, another console records a write of its own
  // (on a follower, the leader binding a version, say): once, on the first read.
  const service = h.rt.tuners as unknown as { fresh(lbId: string): Promise<unknown> };
  const read = service.fresh.bind(service);
  let reads = 0;
  service.fresh = async (lbId: string) => {
    const live = await read(lbId);
    reads += 1;
    if (reads === 1) {
      const other = await readRun();
      other.writtenAt = await persistRun(h.rt.store, other, null, 0, Date.now());
    }
    return live;
  };
  try {
    await stopTuner(h.rt, OPERATOR, { lbId: LB });
  } finally {
    service.fresh = read;
  }
  assert.equal(reads, 2, "the stop was made a second time, on the run as the other write left it");
  const stored = await currentRun(h.rt.store, LB);
  assert.equal(stored?.running, false, "the operator's stop is recorded");
});

test("a reset on another console ends the run at a new revision: the leader's next step on it is refused, not recorded", async () => {
  const leader = await readRun();
  // A follower resets the LB's tuner (TunerService.reset: a new run).
  await newRun(h.rt.store, { lbId: LB, weights: { rtt: 1, queue: 1 }, settings: null, running: false, seed: () => 1 }, Date.now());
  const step: TunerStep = {
    step: 1,
    kind: "candidate",
    weights: { rtt: 1, queue: 1 },
    fitnessP95TtftMs: 100,
    e2eP95Ms: 200,
    maxShare: 0.5,
    errorRate: 0,
    samples: 50,
    accepted: true,
    guardrail: "pass",
    sigma: 0.1,
    incumbent: { rtt: 1, queue: 1 },
    incumbentP95TtftMs: 100,
    incumbentGuardrail: "pass",
    converged: false,
    configVersion: 1,
  };
  // Term 0 here: the fence under test is the revision's (with a term the lease's passes too).
  await assert.rejects(persistRun(h.rt.store, leader, step, 0, Date.now()), RunMoved);
  const { tunerSteps } = h.rt.store.tables;
  assert.equal((await h.rt.store.db.select().from(tunerSteps).where(eq(tunerSteps.runId, leader.runId))).length, 0, "no step in the ended run");
});
