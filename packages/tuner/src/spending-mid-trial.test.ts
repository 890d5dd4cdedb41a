// Alpha spending across a mid-trial change of lookEvery / maxSamples: the console's settings restore
// the state under the new trial config and the trial goes on. The levels a trial tests at must still
// sum to at most α (rebuilt from the look count under the new settings, they re-spent α: 0.073 and
// 0.068 in the two cases below).
import test from "node:test";
import assert from "node:assert/strict";
import { EsTuner, armOf, type TunerState } from "./index";

/** Candidate a little (not significantly) better in the tail, so no early stop: every look spends alpha. */
function feedUntil(tuner: EsTuner, n: number, alphas: number[], counter: { i: number }): void {
  const trialId = tuner.current().trial!.id;
  while (tuner.trial()!.samples.incumbent + tuner.trial()!.samples.candidate < n) {
    const t = tuner.current().trial!;
    assert.equal(t.id, trialId, "trial ended early");
    const i = counter.i++;
    const sessionKey = `s${i}`;
    const arm = armOf(sessionKey, t.salt, t.share);
    // tail: incumbent 1 in 12 slow, candidate 1 in 16 slow
    const slow = arm === "incumbent" ? i % 12 === 0 : i % 16 === 0;
    const ttftMs = slow ? 2000 + (i % 7) : 100 + (i % 50);
    const looksBefore = tuner.trial()!.looks;
    const step = tuner.observe({
      configVersion: 1,
      ttftMs,
      e2eMs: ttftMs + 500,
      replicaId: `r${i % 3}`,
      ok: true,
      trialId: t.id,
      arm,
      sessionKey,
      triggered: true,
    });
    assert.equal(step, null, `trial decided at sample ${i}: ${step?.trial?.decision} ${step?.trial?.reason}`);
    if (tuner.trial()!.looks > looksBefore) alphas.push(tuner.trial()!.latestAlpha!);
  }
}

function withTrialConfig(tuner: EsTuner, patch: Partial<TunerState["config"]["trial"]>): EsTuner {
  const state = tuner.state();
  return EsTuner.restore({ ...state, config: { ...state.config, trial: { ...state.config.trial, ...patch } } });
}

test("lookEvery lowered mid-trial: the alpha spent over the trial's looks stays <= alpha", () => {
  let tuner = new EsTuner({ seed: 3, trial: { baselineEvery: 0 } });
  const alphas: number[] = [];
  const counter = { i: 0 };
  feedUntil(tuner, 400, alphas, counter); // 8 looks at 50, 100, ..., 400: 0.8 alpha spent
  tuner = withTrialConfig(tuner, { lookEvery: 10 });
  feedUntil(tuner, 410, alphas, counter); // one more look
  const total = alphas.reduce((a, b) => a + b, 0);
  assert.ok(total <= 0.05 + 1e-12, `spent ${total.toFixed(4)} > alpha 0.05`);
});

test("maxSamples raised mid-trial: the alpha spent over the trial's looks stays <= alpha", () => {
  let tuner = new EsTuner({ seed: 3, trial: { baselineEvery: 0 } });
  const alphas: number[] = [];
  const counter = { i: 0 };
  feedUntil(tuner, 400, alphas, counter);
  tuner = withTrialConfig(tuner, { maxSamples: 1000 });
  feedUntil(tuner, 950, alphas, counter);
  const total = alphas.reduce((a, b) => a + b, 0);
  assert.ok(total <= 0.05 + 1e-12, `spent ${total.toFixed(4)} > alpha 0.05`);
});
