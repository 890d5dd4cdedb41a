// A persisted state the tuner cannot continue from is refused at restore with the field named
// (TunerInputError), or continues working: before, a state without a trajectory threw at the first
// decided trial, a null sample threw in observe, a trial without looks tested at NaN (never
// accepting), and an online A/B state without a trial never started one.
import test from "node:test";
import assert from "node:assert/strict";
import { EsTuner, armOf, TunerInputError, type TunerState } from "./index";

function run(tuner: EsTuner, n: number): void {
  for (let i = 0; i < n; i++) {
    const t = tuner.current().trial;
    const sessionKey = `s${i}`;
    const arm = t ? armOf(sessionKey, t.salt, t.share) : undefined;
    tuner.observe({
      configVersion: 1,
      ttftMs: arm === "candidate" ? 50 : 100 + (i % 100),
      e2eMs: 300,
      replicaId: `r${i % 3}`,
      ok: true,
      ...(t ? { trialId: t.id, arm, triggered: true } : {}),
      sessionKey,
    });
  }
}

// biome-ignore lint/suspicious/noExplicitAny: the point is a state of any shape
const cases: Record<string, (s: Record<string, any>) => void> = {
  "outcomes missing": (s) => delete s.outcomes,
  "trajectory missing": (s) => delete s.trajectory,
  "trial.looks missing": (s) => delete s.trial.looks,
  "trial.share missing": (s) => delete s.trial.share,
  "config.trial missing lookEvery -> default": (s) => delete s.config.trial.lookEvery,
  "trial.samples[0] = null": (s) => (s.trial.samples[0] = null),
  "online ab, trial null": (s) => {
    s.trial = null;
    s.current.trial = null;
  },
};
for (const [name, mutate] of Object.entries(cases)) {
  test(`malformed state (${name}): restore rejects it with TunerInputError, or the tuner keeps working`, () => {
    const base = new EsTuner({ seed: 1, trial: { lookEvery: 25, maxSamples: 120 } });
    run(base, 30);
    const state = JSON.parse(JSON.stringify(base.state()));
    mutate(state);
    let restored: EsTuner;
    try {
      restored = EsTuner.restore(state as TunerState);
    } catch (e) {
      assert.ok(e instanceof TunerInputError, `restore threw ${e}`);
      return;
    }
    const stepsBefore = restored.state().step;
    try {
      run(restored, 600);
    } catch (e) {
      assert.fail(`restore accepted it, then observe threw: ${(e as Error).message}`);
    }
    const after = restored.state();
    assert.ok(
      after.step > stepsBefore,
      `restore accepted it, then no trial was decided in 600 samples (trial ${after.trial ? after.trial.id + " looks " + after.trial.looks : "null"})`,
    );
    assert.ok(!after.trajectory.some((s) => s.trial && !Number.isFinite(s.trial.alphaAtLook)), "NaN alpha");
  });
}
