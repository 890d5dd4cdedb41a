// Pausing: while the LB's policy ignores the weights, no trial runs and nothing moves the incumbent;
// resuming continues from the incumbent.
import { test } from "node:test";
import assert from "node:assert/strict";
import { EsTuner, TunerInputError } from "./index";
import { driftingBowl, driveTrials, flatDrifting, sample, windowed } from "./test-helpers";

const REASON = 'policy "least-load" does not use W_rtt/W_queue';

function tunedTuner(): EsTuner {
  const tuner = new EsTuner({ seed: 11, trial: { lookEvery: 50, maxSamples: 400 } });
  const { steps } = driveTrials(tuner, driftingBowl, { seed: 11, samples: 3_000 });
  assert.ok(steps.length > 0, "some trials were decided before the pause");
  return tuner;
}

test("paused, no trial runs and no sample moves the incumbent, however long the traffic goes on", () => {
  const tuner = tunedTuner();
  const incumbent = tuner.state().incumbent.weights;
  const steps = tuner.state().step;
  const trialBefore = tuner.current().trial;
  assert.ok(trialBefore, "a trial was running");

  tuner.pause(REASON);
  assert.equal(tuner.pausedReason, REASON);
  assert.equal(tuner.trial(), null);
  assert.deepEqual(tuner.current(), { weights: incumbent, version: null, role: "incumbent", trial: null }, "the incumbent goes live, without a trial");

  // Late events of the dropped trial, then a long stretch where no weight matters.
  assert.equal(tuner.observe({ ...sample(1, 900), trialId: trialBefore.id, arm: "candidate", sessionKey: "late" }), null);
  const { steps: whilePaused } = driveTrials(tuner, flatDrifting, { seed: 12, samples: 20_000 });
  assert.deepEqual(whilePaused, [], "no step while paused");
  tuner.observePeer({ replicaId: "r1" });
  assert.deepEqual(tuner.state().incumbent.weights, incumbent);
  assert.deepEqual(tuner.current().weights, incumbent, "never walks towards a bound");
  assert.equal(tuner.state().step, steps);
});

test("resume continues from the incumbent with a new trial", () => {
  const tuner = tunedTuner();
  const incumbent = tuner.state().incumbent.weights;
  const oldTrial = tuner.current().trial!.id;
  tuner.pause(REASON);
  tuner.resume();
  assert.equal(tuner.pausedReason, null);
  const current = tuner.current();
  assert.deepEqual(current.weights, incumbent, "the incumbent's weights, not a bound's");
  assert.ok(current.trial, "a trial runs again");
  assert.notEqual(current.trial.id, oldTrial, "a fresh trial: the paused one's samples mean nothing");
  assert.notDeepEqual(current.trial.candidate, incumbent);
  const { steps } = driveTrials(tuner, driftingBowl, { seed: 13, samples: 2_000 });
  assert.ok(steps.length > 0, "trials are decided again");
  tuner.resume(); // a no-op when not paused
});

test("operator actions while paused keep the pause; it survives state() and restore()", () => {
  const tuner = tunedTuner();
  tuner.pause(REASON);
  tuner.setMode("static");
  tuner.setMode("online");
  assert.equal(tuner.current().trial, null, "going online while paused starts no trial");
  tuner.setBounds({ rtt: [0.05, 50], queue: [0.05, 5] });
  assert.equal(tuner.current().trial, null);
  tuner.reset();
  assert.equal(tuner.pausedReason, REASON, "reset keeps the pause");
  assert.equal(tuner.current().trial, null);

  const restored = EsTuner.restore(tuner.state());
  assert.equal(restored.pausedReason, REASON);
  assert.equal(restored.current().trial, null);
  restored.resume();
  assert.ok(restored.current().trial);

  // A state persisted before pauses existed restores unpaused.
  const { paused: _, ...older } = tuner.state();
  assert.equal(EsTuner.restore(older as ReturnType<EsTuner["state"]>).pausedReason, null);
});

test("paper mode: the candidate under measurement is dropped and windows stop closing", () => {
  const tuner = new EsTuner(windowed({ seed: 3, window: 4 }));
  tuner.pause(REASON);
  assert.equal(tuner.current().role, "incumbent");
  for (let i = 0; i < 40; i++) assert.equal(tuner.observe(sample(1, 500 + i)), null);
  tuner.resume();
  assert.equal(tuner.current().role, "remeasure", "resuming re-measures the incumbent first");
});

test("a pause needs a reason", () => {
  const tuner = new EsTuner({ seed: 1 });
  assert.throws(() => tuner.pause(""), TunerInputError);
  assert.throws(() => tuner.pause(undefined as unknown as string), TunerInputError);
  assert.equal(tuner.pausedReason, null);
});
