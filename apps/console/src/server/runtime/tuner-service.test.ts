// TunerService behaviour around operator actions, guardrail reporting and restarts. Most tests run
// in-process: the publisher records versions (no push loop) and events go straight to ingest().
import { strict as assert } from "node:assert";
import { afterEach, beforeEach, describe, test } from "node:test";
import { EsTuner, type TunerState } from "@meridian/tuner";
import type { LbConfig, TelemetryEvent } from "@meridian/protocol";
import { lbConfigs, loadBalancers, tunerRuns, tunerSteps } from "@meridian/db";
import { desc, eq } from "drizzle-orm";
import { createHarness, OPERATOR, TEST_TOKEN, waitFor, type Harness } from "../testing/harness";
import { startFakeLb } from "../testing/fake-lb";
import { telemetryEvent } from "../testing/telemetry-event";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createReplica } from "../services/replicas";
import { resetTuner, setManualWeights, startTuner, stopTuner, tunerByLb, updateTuner } from "../services/tuner";
import { ConsoleRuntime } from "./runtime";

const LB = "lb-a";
const WINDOW = 8;

function setup(h: Harness, url = "http://127.0.0.1:9"): void {
  createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
  createLb(h.rt, OPERATOR, { name: LB, url, region: "us-ashburn" });
  createReplica(h.rt, OPERATOR, { name: "r1", url: "http://127.0.0.1:9", region: "us-ashburn", engine: "sglang", model: "m", homeLbId: LB });
  createReplica(h.rt, OPERATOR, { name: "r2", url: "http://127.0.0.1:10", region: "us-ashburn", engine: "vllm", model: "m", homeLbId: LB });
}

let seq = 0;
function event(configVersion: number, partial: Partial<TelemetryEvent> = {}): TelemetryEvent {
  seq += 1;
  return telemetryEvent({ seq, time: Date.now(), lbId: LB, region: "us-ashburn", replicaId: seq % 2 ? "r1" : "r2", configVersion, ...partial });
}

/** A smooth landscape with its optimum at (0.3, 0.1), so the ES finds weights better than any start. */
const ttftAt = (w: { rtt: number; queue: number }) => 100 + 200 * Math.abs(w.rtt - 0.3) + 400 * Math.abs(w.queue - 0.1);

/** Feeds one full window under the tuner's bound version; returns the events fed. */
function feedWindow(rt: ConsoleRuntime, make: (i: number) => Partial<TelemetryEvent> = () => ({})): TelemetryEvent[] {
  const d = rt.tuners.describe(LB);
  assert.ok(d.boundVersion !== null, "tuner bound to a version");
  const events: TelemetryEvent[] = [];
  for (let i = 0; i < WINDOW; i += 1) {
    const e = event(d.boundVersion, { ttftMs: ttftAt(d.weights) + i, ...make(i) });
    events.push(e);
    rt.telemetry.ingest(LB, e);
  }
  return events;
}

const latestConfig = (rt: ConsoleRuntime) =>
  JSON.parse(rt.db.select().from(lbConfigs).where(eq(lbConfigs.lbId, LB)).orderBy(desc(lbConfigs.version)).limit(1).get()!.json) as LbConfig;

const smallWindow = { window: WINDOW, guardrails: { enabled: true, e2eRatio: 0.25, maxShare: 1, maxErrorRate: 0.5 } };

describe("TunerService (in-process)", () => {
  let h: Harness;
  beforeEach(() => {
    h = createHarness();
    setup(h);
    h.rt.tuners.start();
  });
  afterEach(() => h.close());

  test("stop after manual → start freezes the incumbent the run found, shows it and publishes it", () => {
    updateTuner(h.rt, OPERATOR, { lbId: LB, ...smallWindow });
    setManualWeights(h.rt, OPERATOR, { lbId: LB, weights: { rtt: 0.8, queue: 0.2 } });
    assert.deepEqual(latestConfig(h.rt).weights, { rtt: 0.8, queue: 0.2 });
    startTuner(h.rt, OPERATOR, { lbId: LB });
    // Start after manual: the ES starts from the operator's weights (a remeasure of them first).
    const started = tunerByLb(h.rt, { lbId: LB });
    assert.equal(started.role, "remeasure");
    assert.deepEqual(started.weights, { rtt: 0.8, queue: 0.2 });
    for (let w = 0; w < 12; w += 1) feedWindow(h.rt);
    const running = tunerByLb(h.rt, { lbId: LB });
    assert.ok(
      running.steps.some((s) => s.kind === "candidate" && s.accepted),
      "some candidate beat the manual weights",
    );
    const incumbent = running.incumbent;
    assert.notDeepEqual(incumbent, { rtt: 0.8, queue: 0.2 });
    assert.ok(ttftAt(incumbent) < ttftAt({ rtt: 0.8, queue: 0.2 }));

    stopTuner(h.rt, OPERATOR, { lbId: LB });
    const stopped = tunerByLb(h.rt, { lbId: LB });
    assert.equal(stopped.mode, "static");
    assert.equal(stopped.running, false);
    assert.deepEqual(stopped.weights, incumbent, "the view shows the incumbent, not the manual weights");
    assert.deepEqual(latestConfig(h.rt).weights, incumbent, "the incumbent is what the LB is sent");
    const row = h.rt.db.select().from(loadBalancers).where(eq(loadBalancers.id, LB)).get()!;
    assert.deepEqual({ rtt: row.weightRtt, queue: row.weightQueue }, incumbent);

    // Stopped means stopped: further events do not step the tuner.
    const steps = stopped.steps.length;
    for (let i = 0; i < WINDOW; i += 1) h.rt.telemetry.ingest(LB, event(stopped.boundVersion!));
    assert.equal(tunerByLb(h.rt, { lbId: LB }).steps.length, steps);
  });

  test("reset starts a new run from the initial weights, not the manual or the incumbent ones", () => {
    const initial = tunerByLb(h.rt, { lbId: LB }).weights;
    updateTuner(h.rt, OPERATOR, { lbId: LB, ...smallWindow });
    setManualWeights(h.rt, OPERATOR, { lbId: LB, weights: { rtt: 0.8, queue: 0.2 } });
    startTuner(h.rt, OPERATOR, { lbId: LB });
    for (let w = 0; w < 4; w += 1) feedWindow(h.rt);
    const before = tunerByLb(h.rt, { lbId: LB });
    resetTuner(h.rt, OPERATOR, { lbId: LB });
    const after = tunerByLb(h.rt, { lbId: LB });
    assert.notEqual(after.runId, before.runId);
    assert.deepEqual(after.weights, initial);
    assert.deepEqual(after.incumbent, initial);
    assert.equal(after.steps.length, 0);
    assert.equal(after.running, true, "a running tuner keeps running after a reset");
    assert.equal(after.role, "remeasure");
    assert.deepEqual(latestConfig(h.rt).weights, initial);
  });

  test("an accepted less-bad guardrail violator is stored as accepted, and the incumbent's violation is reported", () => {
    updateTuner(h.rt, OPERATOR, { lbId: LB, window: WINDOW, guardrails: { enabled: true, e2eRatio: 0.25, maxShare: 0.8, maxErrorRate: 0.5 } });
    startTuner(h.rt, OPERATOR, { lbId: LB });
    // Remeasure: every request on r1 (share 1 > 0.8) — the incumbent is the reward hack.
    feedWindow(h.rt, () => ({ replicaId: "r1" }));
    const hacked = tunerByLb(h.rt, { lbId: LB });
    assert.equal(hacked.incumbentGuardrail, "share");
    assert.equal(hacked.incumbentMaxShare, 1);
    assert.equal(hacked.steps[0]?.incumbentGuardrail, "share");
    // A candidate still over the cap but less so (7/8 on r1), with worse TTFT: accepted as less bad.
    feedWindow(h.rt, (i) => ({ replicaId: i < 7 ? "r1" : "r2", ttftMs: 500 }));
    const climbing = tunerByLb(h.rt, { lbId: LB });
    const step = climbing.steps.at(-1)!;
    assert.equal(step.kind, "candidate");
    assert.equal(step.accepted, true);
    assert.equal(step.guardrail, "share");
    assert.equal(step.incumbentGuardrail, "share");
    const row = h.rt.db.select().from(tunerSteps).orderBy(desc(tunerSteps.id)).limit(1).get()!;
    assert.equal(row.accepted, true);
    assert.equal(row.guardrail, "share");
    assert.equal(climbing.incumbentGuardrail, "share");
    assert.equal(climbing.incumbentMaxShare, 7 / 8);
    // A passing candidate clears the violation.
    feedWindow(h.rt);
    const out = tunerByLb(h.rt, { lbId: LB });
    assert.equal(out.steps.at(-1)?.accepted, true);
    assert.equal(out.steps.at(-1)?.guardrail, null);
    assert.equal(out.incumbentGuardrail, "pass");
    assert.equal(out.steps.at(-1)?.incumbentGuardrail, "pass");
  });

  test("events routed under an older config version are never scored for a newer candidate", () => {
    updateTuner(h.rt, OPERATOR, { lbId: LB, ...smallWindow });
    startTuner(h.rt, OPERATOR, { lbId: LB });
    const v1 = tunerByLb(h.rt, { lbId: LB }).boundVersion!;
    feedWindow(h.rt); // remeasure closes; a candidate is published under a newer version
    const candidate = tunerByLb(h.rt, { lbId: LB });
    assert.equal(candidate.role, "candidate");
    assert.ok(candidate.boundVersion! > v1);
    // Stragglers of the remeasure's version, and events of a version never bound, are ignored.
    for (let i = 0; i < 2 * WINDOW; i += 1) h.rt.telemetry.ingest(LB, event(v1));
    for (let i = 0; i < WINDOW; i += 1) h.rt.telemetry.ingest(LB, event(candidate.boundVersion! + 1));
    const after = tunerByLb(h.rt, { lbId: LB });
    assert.equal(after.windowFill, 0);
    assert.equal(after.steps.length, 1);
    // Its own version's events fill the window.
    h.rt.telemetry.ingest(LB, event(candidate.boundVersion!));
    assert.equal(tunerByLb(h.rt, { lbId: LB }).windowFill, 1);
  });

  test("a measurement always gets a version of its own, even when the config did not change", () => {
    updateTuner(h.rt, OPERATOR, { lbId: LB, ...smallWindow });
    const staticVersion = tunerByLb(h.rt, { lbId: LB }).boundVersion!;
    // The incumbent has been live under staticVersion; events routed then must not count for its remeasure.
    startTuner(h.rt, OPERATOR, { lbId: LB });
    const started = tunerByLb(h.rt, { lbId: LB });
    assert.equal(started.role, "remeasure");
    assert.ok(started.boundVersion! > staticVersion, `remeasure bound to ${started.boundVersion}, static was ${staticVersion}`);
    assert.deepEqual(latestConfig(h.rt).weights, started.weights);
    for (let i = 0; i < WINDOW; i += 1) h.rt.telemetry.ingest(LB, event(staticVersion));
    assert.equal(tunerByLb(h.rt, { lbId: LB }).windowFill, 0);
  });

  test("a restarted console resumes each tuner exactly where it stopped", () => {
    updateTuner(h.rt, OPERATOR, { lbId: LB, ...smallWindow });
    startTuner(h.rt, OPERATOR, { lbId: LB });
    for (let w = 0; w < 5; w += 1) feedWindow(h.rt);
    const before = tunerByLb(h.rt, { lbId: LB });
    const stateBefore = h.rt.tuners.ensure(LB).tuner.state();
    // What the uninterrupted tuner would do next, from the in-memory state.
    const reference = EsTuner.restore(JSON.parse(JSON.stringify(stateBefore)) as TunerState);

    const rt2 = new ConsoleRuntime(h.rt.db, h.rt.options);
    rt2.tuners.start();
    const resumed = rt2.tuners.ensure(LB);
    assert.equal(resumed.runId, before.runId);
    assert.equal(resumed.running, true);
    assert.deepEqual(resumed.tuner.state(), stateBefore, "the persisted state is the live state");
    assert.deepEqual(rt2.tuners.describe(LB).steps, before.steps);

    const events = feedWindow(rt2);
    let expected = null;
    for (const e of events)
      expected = reference.observe({ configVersion: e.configVersion, ttftMs: e.ttftMs, e2eMs: e.e2eMs, replicaId: e.replicaId, ok: true }) ?? expected;
    assert.ok(expected);
    const after = rt2.tuners.describe(LB);
    assert.equal(after.steps.length, before.steps.length + 1);
    const next = after.steps.at(-1)!;
    assert.equal(next.step, expected.step);
    assert.deepEqual(next.weights, expected.weights);
    assert.equal(next.accepted, expected.accepted);
    assert.equal(next.sigma, expected.sigma);
    assert.deepEqual(after.incumbent, expected.incumbent);
    assert.deepEqual(after.weights, reference.current().weights, "the same next candidate");
  });

  test("a half-filled window persisted by an operator action is not double-counted by the replay after a restart", () => {
    updateTuner(h.rt, OPERATOR, { lbId: LB, ...smallWindow });
    startTuner(h.rt, OPERATOR, { lbId: LB });
    const version = tunerByLb(h.rt, { lbId: LB }).boundVersion!;
    const early = Array.from({ length: 5 }, () => event(version));
    for (const e of early) h.rt.telemetry.ingest(LB, e);
    // Re-asserting "online" keeps the half-filled window and persists it.
    startTuner(h.rt, OPERATOR, { lbId: LB });
    const stored = JSON.parse(h.rt.db.select().from(tunerRuns).get()!.stateJson!) as TunerState;
    assert.equal(stored.window.length, 5);

    const rt2 = new ConsoleRuntime(h.rt.db, h.rt.options);
    rt2.tuners.start();
    rt2.tuners.ensure(LB);
    // The new TelemetryHub subscribes from seq 0: the LB resends the same five events.
    for (const e of early) rt2.telemetry.ingest(LB, e);
    assert.equal(rt2.tuners.describe(LB).windowFill, 5);
    for (let i = 0; i < 3; i += 1) rt2.telemetry.ingest(LB, event(version));
    const d = rt2.tuners.describe(LB);
    assert.equal(d.steps.length, 1);
    assert.equal(rt2.tuners.ensure(LB).tuner.trajectory()[0]?.samples, WINDOW);
  });
});

test("stop pushes the incumbent to the LB itself (ConfigPublisher → PUT /admin/config)", async () => {
  const h = createHarness();
  const lb = await startFakeLb({ id: LB, region: "us-ashburn", token: TEST_TOKEN });
  try {
    setup(h, lb.url);
    h.rt.start();
    await waitFor(() => lb.version > 0, 5_000, "first config");
    updateTuner(h.rt, OPERATOR, { lbId: LB, ...smallWindow });
    setManualWeights(h.rt, OPERATOR, { lbId: LB, weights: { rtt: 0.8, queue: 0.2 } });
    startTuner(h.rt, OPERATOR, { lbId: LB });
    for (let w = 0; w < 10; w += 1) {
      const { boundVersion, weights } = tunerByLb(h.rt, { lbId: LB });
      await waitFor(() => lb.version >= boundVersion!, 5_000, `version ${boundVersion} live`);
      for (let i = 0; i < WINDOW; i += 1) lb.emit({ configVersion: boundVersion!, ttftMs: ttftAt(weights) + i, replicaId: i % 2 ? "r1" : "r2" });
      await waitFor(() => tunerByLb(h.rt, { lbId: LB }).steps.length === w + 1, 5_000, `step ${w + 1}`);
    }
    const { incumbent } = tunerByLb(h.rt, { lbId: LB });
    assert.notDeepEqual(incumbent, { rtt: 0.8, queue: 0.2 });
    stopTuner(h.rt, OPERATOR, { lbId: LB });
    const stopped = tunerByLb(h.rt, { lbId: LB });
    assert.deepEqual(stopped.weights, incumbent);
    await waitFor(() => lb.version >= stopped.boundVersion!, 5_000, "stopped config live");
    assert.deepEqual(lb.configs.at(-1)?.weights, incumbent);
  } finally {
    h.close();
    await lb.close();
  }
});
