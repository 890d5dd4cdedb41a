// What a running trial keeps when TunerService reads its run again. After a console restart the
// TelemetryHub replays every LB's buffer: the trial's own samples come back (matched by trial id),
// peer LBs' requests older than the trial do not count, and the α its looks spent (recorded at every
// look) is not spent again. On a reload while this console leads (another console changed the run),
// the trial (or a paper-mode window) keeps what it measured, also while a restart's replay still
// refills it. In-process: events go straight to ingest().
import { strict as assert } from "node:assert";
import { afterEach, beforeEach, describe, test } from "node:test";
import { armOf } from "@meridian/tuner";
import type { TelemetryEvent } from "@meridian/protocol";
import { eq } from "drizzle-orm";
import { createHarness, OPERATOR, type Harness } from "../testing/harness";
import { telemetryEvent } from "../testing/telemetry-event";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { startTuner, tunerByLb, updateTuner } from "../services/tuner";
import { ConsoleRuntime } from "./runtime";

const LB = "lb-a";
const PEER = "lb-b";
/** Looks every 50 samples, a cap far off: 100 alike samples decide nothing. */
const SLOW_TRIALS = { trial: { lookEvery: 50, maxSamples: 500 } };

async function setup(h: Harness): Promise<void> {
  await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
  await createRegion(h.rt, OPERATOR, { name: "eu-frankfurt" });
  await createLb(h.rt, OPERATOR, { name: LB, url: "http://127.0.0.1:9", region: "us-ashburn" });
  await createLb(h.rt, OPERATOR, { name: PEER, url: "http://127.0.0.1:8", region: "eu-frankfurt" });
  await h.rt.tuners.start();
  await updateTuner(h.rt, OPERATOR, { lbId: LB, ...SLOW_TRIALS });
  await startTuner(h.rt, OPERATOR, { lbId: LB });
}

/** The LBs' rings as they would replay them: every event each has sent, in its order. */
const rings = new Map<string, TelemetryEvent[]>();
function send(rt: ConsoleRuntime, event: TelemetryEvent): void {
  rings.set(event.lbId, [...(rings.get(event.lbId) ?? []), event]);
  rt.telemetry.ingest(event.lbId, event);
}
const seqOf = (lbId: string) => (rings.get(lbId)?.length ?? 0) + 1;

/** `n` requests of the running trial on lb-a, each its own session; both arms alike. */
async function trialRequests(rt: ConsoleRuntime, n: number): Promise<void> {
  const trial = (await rt.tuners.ensure(LB)).tuner.current().trial;
  assert.ok(trial, "a trial is running");
  for (let i = 0; i < n; i += 1) {
    const sessionKey = `s${seqOf(LB)}`;
    const arm = armOf(sessionKey, trial.salt, trial.share);
    const fields = { trialId: trial.id, arm, triggered: true, sessionKey, ttftMs: 100 + (i % 13), replicaId: i % 2 ? "r1" : "r2" };
    send(rt, telemetryEvent({ seq: seqOf(LB), time: Date.now(), lbId: LB, region: "us-ashburn", ...fields }));
  }
  await rt.tuners.idle();
}

/** `n` requests lb-b routed to its replica r3, finished at `time`. */
async function peerRequests(rt: ConsoleRuntime, n: number, time = Date.now()): Promise<void> {
  for (let i = 0; i < n; i += 1) send(rt, telemetryEvent({ seq: seqOf(PEER), time, lbId: PEER, region: "eu-frankfurt", replicaId: "r3" }));
  await rt.tuners.idle();
}

/** A console restarted on the same database: its hub subscribes from seq 0, and each LB resends its ring. */
async function restart(h: Harness, order: string[] = [PEER, LB]): Promise<ConsoleRuntime> {
  const rt = new ConsoleRuntime(h.rt.database, h.rt.options);
  await rt.tuners.start();
  for (const lbId of order) for (const event of rings.get(lbId) ?? []) rt.telemetry.ingest(lbId, event);
  await rt.tuners.idle();
  return rt;
}

/** A restart whose leader has replayed 20 of lb-a's events when a follower's change moves the run
 * and the leader's reconcile reloads it; then the rest of the replay. */
async function restartWithChangeMidReplay(h: Harness): Promise<ConsoleRuntime> {
  const rt = new ConsoleRuntime(h.rt.database, h.rt.options);
  await rt.tuners.start();
  const ring = rings.get(LB)!;
  for (const event of ring.slice(0, 20)) rt.telemetry.ingest(LB, event);
  await rt.tuners.idle();
  const follower = new ConsoleRuntime(h.rt.database, h.rt.options);
  await updateTuner(follower, OPERATOR, { lbId: LB, guardrails: { maxErrorRate: 0.1 } });
  await rt.tuners.reconcile();
  assert.equal((await tunerByLb(rt, { lbId: LB })).guardrails.maxErrorRate, 0.1, "the change was taken");
  for (const event of ring.slice(20)) rt.telemetry.ingest(LB, event);
  await rt.tuners.idle();
  return rt;
}

const trialState = async (rt: ConsoleRuntime) => (await rt.tuners.ensure(LB)).tuner.state().trial!;

async function storedTrial(rt: ConsoleRuntime) {
  const { tunerRuns } = rt.store.tables;
  const [run] = await rt.store.db.select().from(tunerRuns).where(eq(tunerRuns.lbId, LB)).limit(1);
  return JSON.parse(run!.stateJson!).trial;
}

describe("a running trial, read again", () => {
  let h: Harness;
  beforeEach(async () => {
    rings.clear();
    h = await createHarness({ minTrialPushIntervalMs: 0 });
    await setup(h);
  });
  afterEach(() => h.close());

  test("after a restart, peer LBs' requests from before the trial do not count toward its fleet-share guardrail", async () => {
    // lb-b's ring holds an hour-old history before the trial, then the requests it routes beside the trial.
    const history = Array.from({ length: 500 }, (_, i) =>
      telemetryEvent({ seq: i + 1, time: Date.now() - 3_600_000, lbId: PEER, region: "eu-frankfurt", replicaId: "r3" }),
    );
    rings.set(PEER, history);
    await trialRequests(h.rt, 40);
    await peerRequests(h.rt, 40);
    const before = await trialState(h.rt);
    assert.deepEqual(before.peerCounts, { r3: 40 });

    const rt2 = await restart(h);
    const after = await trialState(rt2);
    assert.equal(after.id, before.id);
    assert.equal(after.samples.length, 40, "the trial's own samples came back");
    assert.deepEqual(after.peerCounts, before.peerCounts, "and only the peer requests of its own time");
  });

  test("a change made on another console keeps the leader's trial samples, looks and the α they spent", async () => {
    await trialRequests(h.rt, 100);
    const before = await trialState(h.rt);
    assert.equal(before.looks, 2);
    assert.equal((await tunerByLb(h.rt, { lbId: LB })).steps.length, 0, "undecided");

    // A follower (another console on the same database) changes the guardrails; the leader's
    // reconcile reloads the run. Its subscriptions go on: nothing replays the trial.
    const follower = new ConsoleRuntime(h.rt.database, h.rt.options);
    await updateTuner(follower, OPERATOR, { lbId: LB, guardrails: { enabled: true, e2eRatio: 0.3, maxShare: 0.8, maxErrorRate: 0.05 } });
    await h.rt.tuners.reconcile();
    const reloaded = await trialState(h.rt);
    assert.equal((await tunerByLb(h.rt, { lbId: LB })).guardrails.e2eRatio, 0.3, "the change was taken");
    assert.equal(reloaded.id, before.id);
    assert.deepEqual([reloaded.samples.length, reloaded.looks, reloaded.alphaSpent], [100, 2, before.alphaSpent]);

    // The same when the leader's own operator action finds the run changed (it reads it fresh).
    await updateTuner(follower, OPERATOR, { lbId: LB, guardrails: { maxErrorRate: 0.1 } });
    await updateTuner(h.rt, OPERATOR, { lbId: LB, guardrails: { maxShare: 0.9 } });
    const fresh = await trialState(h.rt);
    assert.deepEqual((await tunerByLb(h.rt, { lbId: LB })).guardrails, { enabled: true, e2eRatio: 0.3, maxShare: 0.9, maxErrorRate: 0.1 });
    assert.deepEqual([fresh.id, fresh.samples.length, fresh.looks], [before.id, 100, 2]);
  });

  test("every look records the α it spent: a restart's replay, in another order, spends none of it again", async () => {
    await trialRequests(h.rt, 100);
    await peerRequests(h.rt, 10);
    const spent = (await trialState(h.rt)).alphaSpent;
    assert.ok(spent > 0, "the two looks spent α");
    assert.equal((await storedTrial(h.rt)).alphaSpent, spent, "recorded with the run");

    // lb-a's ring replays before lb-b's, its second half first (as two LBs' streams may interleave).
    const ring = rings.get(LB)!;
    rings.set(LB, [...ring.slice(50), ...ring.slice(0, 50)]);
    const rt2 = await restart(h, [LB, PEER]);
    const after = await trialState(rt2);
    assert.equal(after.samples.length, 100);
    assert.equal(after.looks, 2);
    assert.equal(after.alphaSpent, spent);
    assert.equal(after.latestAlpha, 0, "the replayed looks had no α left to test at");
  });

  test("a change made on another console during a restart's replay leaves every replayed request counted once", async () => {
    await trialRequests(h.rt, 100);
    const before = await trialState(h.rt);
    const rt2 = await restartWithChangeMidReplay(h);
    const after = await trialState(rt2);
    assert.equal(after.id, before.id);
    assert.deepEqual([after.samples.length, after.looks, after.alphaSpent], [100, 2, before.alphaSpent]);
  });

  test("a trial stored before it kept its α restores with what its looks spent, not 0", async () => {
    await trialRequests(h.rt, 100);
    const { tunerRuns } = h.rt.store.tables;
    const [run] = await h.rt.store.db.select().from(tunerRuns).where(eq(tunerRuns.lbId, LB)).limit(1);
    // The state as an older console wrote it: the trial's looks, without alphaSpent.
    const state = { ...JSON.parse(run!.stateJson!), trial: { ...(await trialState(h.rt)), alphaSpent: undefined } };
    await h.rt.store.db
      .update(tunerRuns)
      .set({ stateJson: JSON.stringify(state) })
      .where(eq(tunerRuns.id, run!.id));

    const rt2 = new ConsoleRuntime(h.rt.database, h.rt.options);
    await rt2.tuners.start();
    // Two looks of 50 at a cap of 500, α 0.05 spent evenly: 0.01.
    assert.ok(Math.abs((await trialState(rt2)).alphaSpent - 0.01) < 1e-12, `alphaSpent ${(await trialState(rt2)).alphaSpent}`);
  });
});

describe("a paper-mode tuner's window, read again", () => {
  let h: Harness;
  /** lb-a's requests, not tagged with a trial (paper mode measures windows). */
  async function paperRequests(rt: ConsoleRuntime, n: number): Promise<void> {
    for (let i = 0; i < n; i += 1) {
      send(rt, telemetryEvent({ seq: seqOf(LB), time: Date.now(), lbId: LB, region: "us-ashburn", ttftMs: 100 + (i % 13), replicaId: i % 2 ? "r1" : "r2" }));
    }
    await rt.tuners.idle();
  }
  const windowOf = async (rt: ConsoleRuntime) => {
    const state = (await rt.tuners.ensure(LB)).tuner.state();
    return { window: state.window.length, samplesSinceEvaluation: state.samplesSinceEvaluation, step: state.step };
  };
  beforeEach(async () => {
    rings.clear();
    h = await createHarness({ minTrialPushIntervalMs: 0 });
    await setup(h);
    await updateTuner(h.rt, OPERATOR, { lbId: LB, evaluation: "paper", window: 100, hop: 50 });
    // 60 requests (nothing evaluated yet), then a change that writes the run with them.
    await paperRequests(h.rt, 60);
    await updateTuner(h.rt, OPERATOR, { lbId: LB, guardrails: { maxShare: 0.9 } });
  });
  afterEach(() => h.close());

  test("a change made on another console during a restart's replay leaves every replayed request counted once", async () => {
    const before = await windowOf(h.rt);
    assert.deepEqual(before, { window: 60, samplesSinceEvaluation: 60, step: 0 });
    const rt2 = await restartWithChangeMidReplay(h);
    assert.deepEqual(await windowOf(rt2), before);
    assert.equal((await tunerByLb(rt2, { lbId: LB })).steps.length, 0, "no window closed on requests counted twice");
  });

  test("a change made on another console keeps the window the leader measured since the run was written", async () => {
    await paperRequests(h.rt, 30);
    const before = await windowOf(h.rt);
    assert.deepEqual(before, { window: 90, samplesSinceEvaluation: 90, step: 0 });
    const follower = new ConsoleRuntime(h.rt.database, h.rt.options);
    await updateTuner(follower, OPERATOR, { lbId: LB, guardrails: { maxErrorRate: 0.1 } });
    await h.rt.tuners.reconcile();
    assert.equal((await tunerByLb(h.rt, { lbId: LB })).guardrails.maxErrorRate, 0.1, "the change was taken");
    assert.deepEqual(await windowOf(h.rt), before);
  });
});
