// The fleet scope of TunerService: one tuner sets the weights and the trial of every LB whose policy
// reads them, scores all of their requests, stands the LBs' own tuners aside, hands back to them, and
// resumes after a console restart. In-process: the publisher records versions, events go to ingest().
import { strict as assert } from "node:assert";
import { afterEach, beforeEach, describe, test } from "node:test";
import { armOf } from "@meridian/tuner";
import type { LbConfig, TelemetryEvent } from "@meridian/protocol";
import { desc, eq } from "drizzle-orm";
import { createHarness, OPERATOR, type Harness } from "../testing/harness";
import { telemetryEvent } from "../testing/telemetry-event";
import { DomainError } from "../errors";
import { createLb, setPolicy } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createReplica } from "../services/replicas";
import { fleetTuner, setManualWeights, setTunerScope, startTuner, tunerByLb, tunerScope, updateTuner } from "../services/tuner";
import { ConsoleRuntime } from "./runtime";

const SMALL_TRIALS = { trial: { lookEvery: 10, maxSamples: 120 }, guardrails: { enabled: true, e2eRatio: 0.25, maxShare: 1, maxErrorRate: 0.5 } };
const FLEET = { fleet: true } as const;

/** Two gorgo LBs and one whose policy ignores the weights, each with a replica. */
async function setup(h: Harness): Promise<void> {
  await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
  for (const [i, name] of ["lb-a", "lb-b", "lb-c"].entries()) {
    await createLb(h.rt, OPERATOR, { name, url: `http://127.0.0.1:${20 + i}`, region: "us-ashburn" });
    await createReplica(h.rt, OPERATOR, {
      name: `r-${name}`,
      url: `http://127.0.0.1:${30 + i}`,
      region: "us-ashburn",
      engine: "vllm",
      model: "m",
      homeLbId: name,
    });
  }
  await setPolicy(h.rt, OPERATOR, { id: "lb-c", policy: "least-load", crossRegion: "direct" });
}

async function lbRow(rt: ConsoleRuntime, lbId: string) {
  const { loadBalancers } = rt.store.tables;
  return (await rt.store.db.select().from(loadBalancers).where(eq(loadBalancers.id, lbId)).limit(1))[0]!;
}

async function latestConfig(rt: ConsoleRuntime, lbId: string): Promise<LbConfig> {
  const { lbConfigs } = rt.store.tables;
  const [row] = await rt.store.db.select().from(lbConfigs).where(eq(lbConfigs.lbId, lbId)).orderBy(desc(lbConfigs.version)).limit(1);
  return JSON.parse(row!.json) as LbConfig;
}

let seq = 0;
let session = 0;
/** Events of the fleet's running trial as `lbId` would send them: each its own session, tagged with its arm. */
async function trialEvents(rt: ConsoleRuntime, lbId: string, n: number, ttft: (arm: "incumbent" | "candidate") => number): Promise<TelemetryEvent[]> {
  const trial = JSON.parse((await lbRow(rt, lbId)).trialJson!) as NonNullable<LbConfig["trial"]>;
  return Array.from({ length: n }, () => {
    const sessionKey = `s${(session += 1)}`;
    const arm = armOf(sessionKey, trial.salt, trial.share);
    seq += 1;
    return telemetryEvent({
      seq,
      time: Date.now(),
      lbId,
      region: "us-ashburn",
      replicaId: `r-${lbId}`,
      trialId: trial.id,
      arm,
      triggered: true,
      sessionKey,
      ttftMs: ttft(arm),
    });
  });
}

async function ingest(rt: ConsoleRuntime, events: TelemetryEvent[]): Promise<void> {
  for (const e of events) rt.telemetry.ingest(e.lbId, e);
  await rt.tuners.idle();
}

/** Until the fleet's running trial is decided, on events from both gorgo LBs (the candidate clearly slower). */
async function decideFleetTrial(rt: ConsoleRuntime): Promise<void> {
  const before = (await fleetTuner(rt)).steps.length;
  for (let round = 0; round < 10 && (await fleetTuner(rt)).steps.length === before; round += 1) {
    for (const lbId of ["lb-a", "lb-b"]) await ingest(rt, await trialEvents(rt, lbId, 5, (arm) => (arm === "candidate" ? 900 : 100)));
  }
  assert.equal((await fleetTuner(rt)).steps.length, before + 1, "the trial was decided");
}

async function rejects(work: Promise<unknown>, kind: string, message: RegExp): Promise<void> {
  await assert.rejects(work, (error: unknown) => error instanceof DomainError && error.kind === kind && message.test(error.message));
}

describe("TunerService, fleet scope", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await createHarness({ minTrialPushIntervalMs: 0 });
    await setup(h);
    await h.rt.tuners.start();
  });
  afterEach(() => h.close());

  test("one tuner puts one trial on every gorgo LB, scores both LBs' requests, and counts the other LB's as peers", async () => {
    assert.deepEqual(await tunerScope(h.rt), { scope: "lb" });
    await rejects(fleetTuner(h.rt), "precondition", /fleet tuner is off/);
    await startTuner(h.rt, OPERATOR, { lbId: "lb-a" });
    await setTunerScope(h.rt, OPERATOR, { scope: "fleet" });
    await updateTuner(h.rt, OPERATOR, { ...FLEET, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, FLEET);

    const fleet = await fleetTuner(h.rt);
    assert.equal(fleet.scope, "fleet");
    assert.ok(fleet.trial, "a trial is running");
    for (const lbId of ["lb-a", "lb-b"]) {
      const config = await latestConfig(h.rt, lbId);
      assert.equal(config.trial?.id, fleet.trial.id, `${lbId} runs the fleet's trial`);
      assert.deepEqual(config.weights, fleet.weights);
    }
    assert.equal((await lbRow(h.rt, "lb-c")).trialJson, null, "least-load's LB is not a member");

    // Half of the trial's samples from each member LB.
    const half = await trialEvents(h.rt, "lb-a", 5, () => 100);
    await ingest(h.rt, [...half, ...(await trialEvents(h.rt, "lb-b", 5, () => 100))]);
    const peer = telemetryEvent({ seq: (seq += 1), time: Date.now(), lbId: "lb-c", region: "us-ashburn", replicaId: "r-lb-c", policy: "least-load" });
    await ingest(h.rt, [peer]);
    assert.equal((await fleetTuner(h.rt)).trial!.samples.incumbent + (await fleetTuner(h.rt)).trial!.samples.candidate, 10);
    await decideFleetTrial(h.rt);

    // The LBs' own tuners stand aside while the fleet's is on.
    await rejects(startTuner(h.rt, OPERATOR, { lbId: "lb-a" }), "precondition", /fleet tuner sets the weights of every LB/);
    const own = await tunerByLb(h.rt, { lbId: "lb-a" });
    assert.equal(own.scope, "fleet");
    assert.equal(own.running, false);
  });

  test("a request lb-a forwarded to lb-b is one sample, the client's (lb-a's event), not two", async () => {
    await setTunerScope(h.rt, OPERATOR, { scope: "fleet" });
    await updateTuner(h.rt, OPERATOR, { ...FLEET, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, FLEET);
    // lb-a's events of five requests it forwarded, and lb-b's of the same requests (same session, trial and arm).
    const entries = (await trialEvents(h.rt, "lb-a", 5, () => 300)).map((e) => ({ ...e, forwarded: true, replicaId: null }));
    const served = entries.map((e) => ({ ...e, seq: (seq += 1), lbId: "lb-b", replicaId: "r-lb-b", forwarded: false, hop: 1, ttftMs: 250 }));
    await ingest(h.rt, [...entries, ...served]);
    const { trial } = await fleetTuner(h.rt);
    assert.equal(trial!.samples.incumbent + trial!.samples.candidate, 5);
  });

  test("a request lb-c (whose policy ignores the weights) forwarded to lb-b is one sample, lb-b's event, whichever arrives first", async () => {
    await setTunerScope(h.rt, OPERATOR, { scope: "fleet" });
    await updateTuner(h.rt, OPERATOR, { ...FLEET, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, FLEET);
    // lb-b's events of five requests lb-c forwarded (lb-b routed them in the fleet's trial), and lb-c's
    // own events of them, outside any trial. The serving LB's events usually arrive first.
    const served = (await trialEvents(h.rt, "lb-b", 5, () => 250)).map((e) => ({ ...e, hop: 1, entryLbId: "lb-c", entryPolicy: "least-load" as const }));
    const entries = served.map(({ trialId: _t, arm: _a, triggered: _g, entryLbId: _e, entryPolicy: _p, ...e }) => ({
      ...e,
      seq: (seq += 1),
      lbId: "lb-c",
      policy: "least-load" as const,
      replicaId: null,
      forwarded: true,
      hop: 0,
    }));
    await ingest(h.rt, [...served.slice(0, 3), ...entries, ...served.slice(3)]);
    const { trial } = await fleetTuner(h.rt);
    assert.equal(trial!.samples.incumbent + trial!.samples.candidate, 5);
  });

  test("switching back ends the fleet's run; each LB's tuner starts afresh, stopped, from the weights the fleet left", async () => {
    await setTunerScope(h.rt, OPERATOR, { scope: "fleet" });
    await setManualWeights(h.rt, OPERATOR, { ...FLEET, weights: { rtt: 2, queue: 0.2 } });
    assert.deepEqual((await latestConfig(h.rt, "lb-b")).weights, { rtt: 2, queue: 0.2 });
    const before = (await tunerByLb(h.rt, { lbId: "lb-b" })).runId;

    await setTunerScope(h.rt, OPERATOR, { scope: "lb" });
    assert.deepEqual(await tunerScope(h.rt), { scope: "lb" });
    await rejects(fleetTuner(h.rt), "precondition", /fleet tuner is off/);
    const own = await tunerByLb(h.rt, { lbId: "lb-b" });
    assert.notEqual(own.runId, before, "a fresh run");
    assert.equal(own.running, false);
    assert.deepEqual(own.weights, { rtt: 2, queue: 0.2 });
    assert.deepEqual((await latestConfig(h.rt, "lb-b")).weights, { rtt: 2, queue: 0.2 }, "the LB keeps its weights");
    // And the LB's own tuner answers to the operator again.
    await startTuner(h.rt, OPERATOR, { lbId: "lb-b" });
    assert.equal((await tunerByLb(h.rt, { lbId: "lb-b" })).running, true);
  });

  test("a fleet tuner opened again keeps the settings the operator gave the last one", async () => {
    await setTunerScope(h.rt, OPERATOR, { scope: "fleet" });
    await updateTuner(h.rt, OPERATOR, { ...FLEET, ...SMALL_TRIALS });
    const settings = (await fleetTuner(h.rt)).trialSettings;
    await setTunerScope(h.rt, OPERATOR, { scope: "lb" });
    await setTunerScope(h.rt, OPERATOR, { scope: "fleet" });
    const again = await fleetTuner(h.rt);
    assert.deepEqual(again.trialSettings, settings);
    assert.equal(again.running, false, "opened stopped, as any switch opens it");
  });

  test("an LB that joins takes the fleet's weights and trial; the fleet tuner runs A/B trials only", async () => {
    await setTunerScope(h.rt, OPERATOR, { scope: "fleet" });
    await updateTuner(h.rt, OPERATOR, { ...FLEET, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, FLEET);
    const trialId = (await fleetTuner(h.rt)).trial!.id;
    await setPolicy(h.rt, OPERATOR, { id: "lb-c", policy: "gorgo", crossRegion: "direct" });
    assert.equal((await latestConfig(h.rt, "lb-c")).trial?.id, trialId);
    await createLb(h.rt, OPERATOR, { name: "lb-d", url: "http://127.0.0.1:24", region: "us-ashburn" });
    assert.equal((await latestConfig(h.rt, "lb-d")).trial?.id, trialId);
    await rejects(updateTuner(h.rt, OPERATOR, { ...FLEET, evaluation: "paper" }), "invalid", /A\/B trials only/);
  });

  test("an LB that leaves the members (its policy no longer reads the weights) has the fleet's trial taken off at once", async () => {
    await setTunerScope(h.rt, OPERATOR, { scope: "fleet" });
    await updateTuner(h.rt, OPERATOR, { ...FLEET, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, FLEET);
    const trialId = (await fleetTuner(h.rt)).trial!.id;
    assert.equal((await latestConfig(h.rt, "lb-b")).trial?.id, trialId);
    await setPolicy(h.rt, OPERATOR, { id: "lb-b", policy: "least-load", crossRegion: "direct" });
    const left = await latestConfig(h.rt, "lb-b");
    assert.equal(left.policy, "least-load");
    assert.equal(left.trial, undefined, "no trial on an LB that is not a member");
    assert.equal((await lbRow(h.rt, "lb-b")).trialJson, null);
    assert.equal((await latestConfig(h.rt, "lb-a")).trial?.id, trialId, "the member runs the trial on");
    assert.equal((await fleetTuner(h.rt)).trial?.id, trialId);
  });

  test("switched back to per LB, the fresh tuner of an LB whose policy ignores the weights is paused from the first", async () => {
    await setTunerScope(h.rt, OPERATOR, { scope: "fleet" });
    await setTunerScope(h.rt, OPERATOR, { scope: "lb" });
    assert.match((await tunerByLb(h.rt, { lbId: "lb-c" })).paused ?? "", /least-load.*does not use W_rtt\/W_queue/);
    assert.equal((await tunerByLb(h.rt, { lbId: "lb-a" })).paused, null);
  });
});

test("the fleet tuner resumes after a console restart, on the same run and trial", async () => {
  const h = await createHarness({ minTrialPushIntervalMs: 0 });
  try {
    await setup(h);
    await h.rt.tuners.start();
    await setTunerScope(h.rt, OPERATOR, { scope: "fleet" });
    await updateTuner(h.rt, OPERATOR, { ...FLEET, ...SMALL_TRIALS });
    await startTuner(h.rt, OPERATOR, FLEET);
    await decideFleetTrial(h.rt);
    const live = await fleetTuner(h.rt);

    // Kill (drop the runtime) and restart on the same database.
    const rt2 = new ConsoleRuntime(h.rt.database, h.rt.options);
    await rt2.tuners.start();
    const resumed = await fleetTuner(rt2);
    assert.equal(resumed.runId, live.runId);
    assert.equal(resumed.running, true);
    assert.equal(resumed.trial?.id, live.trial!.id);
    await decideFleetTrial(rt2);
    assert.equal((await fleetTuner(rt2)).steps.length, 2);
  } finally {
    await h.close();
  }
});
