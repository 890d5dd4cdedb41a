// The incumbent is held to the absolute guardrails too (GORGO Appendix D): a tuner started on the
// reward hack must be able to climb out, not "converge" on it because every candidate is compared
// against an incumbent that itself violates.
import { test } from "node:test";
import assert from "node:assert/strict";
import { armOf, EsTuner, type TunerSample, type TunerState, type TunerStep } from "./index";
import { drive, feed, hackedFleet, hackNearestShare, HACK_BOUNDS, HACKED_START, noisyBowl, sample } from "./test-helpers";
import { windowed } from "./test-helpers";

const RAILS_ON = { enabled: true, e2eTolerance: 0.25, maxShare: 0.8, maxErrorRate: 0.05 };
const RAILS_OFF = { ...RAILS_ON, enabled: false };

function closeWindow(tuner: EsTuner, version: number, count: number, make: (i: number) => TunerSample): TunerStep {
  tuner.bind(version);
  const steps = feed(tuner, count, make);
  assert.equal(steps.length, 1, "exactly one window closes");
  return steps[0]!;
}

/** Sample i goes to r0 while i < onFirst, the rest alternate over r1/r2: in a window of n, r0 takes onFirst/n. */
function spread(version: number, ttftMs: number, onFirst: number, extra: Partial<TunerSample> = {}): (i: number) => TunerSample {
  return (i) => sample(version, ttftMs, { replicaId: i < onFirst ? "r0" : `r${1 + (i % 2)}`, ...extra });
}

/** One letter per step, to pin a whole trajectory: r remeasure, A accepted, x rejected on TTFT, else the guardrail's initial. */
function signature(steps: readonly TunerStep[]): string {
  return steps.map((s) => (s.kind === "remeasure" ? "r" : s.accepted ? "A" : s.guardrail === "pass" ? "x" : s.guardrail[0])).join("");
}

test("a tuner started on the reward hack climbs out to guardrail-passing weights and only then converges", () => {
  const floor = HACK_BOUNDS.queue[0];
  assert.ok(hackNearestShare(HACKED_START) > 0.8, "the start really is hacked");
  for (let seed = 1; seed <= 20; seed++) {
    const tuner = new EsTuner(windowed({ seed, bounds: HACK_BOUNDS, guardrails: RAILS_ON }), HACKED_START);
    const steps = drive(tuner, hackedFleet, { seed: 700 + seed, maxSteps: 2000 });
    const first = steps[0]!;
    assert.equal(first.kind, "remeasure");
    assert.equal(first.incumbentGuardrail, "share", `seed ${seed}: the hacked incumbent is flagged on its first measurement`);
    // Bounded escape: worst case over 40 seeds while tuning this was 17 windows.
    const escaped = steps.findIndex((step) => step.incumbentGuardrail === "pass");
    assert.ok(escaped >= 0 && escaped < 30, `seed ${seed}: incumbent passes the guardrails within 30 windows (took ${escaped + 1})`);
    assert.ok(steps[escaped]!.incumbent.queue > 3 * floor, `seed ${seed}: W_queue left its floor (${steps[escaped]!.incumbent.queue})`);

    for (const step of steps) {
      if (step.incumbentGuardrail !== "pass") {
        assert.equal(step.converged, false, `seed ${seed} step ${step.step}: never converged on a violating incumbent`);
        assert.ok(step.sigma >= 0.25, `seed ${seed} step ${step.step}: σ held at σ0/2 or above while violating`);
      }
    }
    assert.ok(tuner.converged, `seed ${seed}: converges within 2000 windows (took ${steps.length})`);
    const last = steps.at(-1)!;
    assert.equal(last.incumbentGuardrail, "pass");
    assert.deepEqual(tuner.current().weights, last.incumbent);
    // The objective rewards W_queue → 0, so the tuner settles at the share cap; measured on 128-sample
    // windows, the pinned weights' expected share can land a little above 0.8, but far from the hack's 0.99.
    assert.ok(hackNearestShare(last.incumbent) < 0.86, `seed ${seed}: pinned weights ${JSON.stringify(last.incumbent)} are not the hack`);
  }
});

test("with guardrails off the reward hack still wins and the trajectory is exactly the pre-fix one", () => {
  const tuner = new EsTuner(windowed({ seed: 5, bounds: HACK_BOUNDS, guardrails: RAILS_OFF }), HACKED_START);
  const steps = drive(tuner, hackedFleet, { seed: 55, maxSteps: 400 });
  // Recorded from the tuner before the incumbent guardrail existed.
  assert.equal(
    signature(steps),
    "rxxxAxrAxxxxrxxxxxrxxxAxrxxxAArxxAAxrxxxxxrxxxxArxxxxxrxxxxArAxxxxrxAxxxrxxxAxrAxxxxrxxxxxrAxAxxrxAxAxrxxxxxrxxxxxrxAxxxrAxxxxrAxxxxrxxxxArxAxxxrxxxxxrxxxxxrA",
  );
  assert.deepEqual(tuner.current().weights, { rtt: 0.8053989490462036, queue: 0.00010018638156144554 });
  assert.equal(tuner.sigma, 0.0442216235019784);
  assert.ok(tuner.converged, "without guardrails the tuner converges on the hack (GORGO Appendix D)");
  assert.ok(steps.every((step) => step.incumbentGuardrail === "pass" && step.guardrail === "pass"));
  assert.equal(steps.at(-1)!.maxShare, 0.984375);
});

test("with guardrails on and a healthy incumbent the trajectory is exactly the pre-fix one", () => {
  const tuner = new EsTuner(windowed({ seed: 3 }));
  const steps = drive(tuner, noisyBowl, { seed: 33, maxSteps: 400 });
  // Recorded from the tuner before the incumbent guardrail existed; E2E rejections ("e") included.
  assert.equal(signature(steps), "reAxeereeAxerexxexrxAxxArxxxxerxxxxxrxxx");
  assert.deepEqual(tuner.current().weights, { rtt: 0.7895148448395787, queue: 0.19786107726153138 });
  assert.equal(tuner.sigma, 0.0442216235019784);
  assert.ok(steps.every((step) => step.incumbentGuardrail === "pass"));
});

test("against a violating incumbent, a candidate that also violates wins only by violating less; TTFT does not count", () => {
  const tuner = new EsTuner(windowed({ seed: 1, window: 10, guardrails: RAILS_ON }));
  // Hacked incumbent: 9 of 10 on r0, TTFT 100 ms.
  const baseline = closeWindow(tuner, 1, 10, spread(1, 100, 9));
  assert.equal(baseline.kind, "remeasure");
  assert.equal(baseline.guardrail, "pass", "remeasure steps keep guardrail = pass");
  assert.equal(baseline.incumbentGuardrail, "share");
  const { maxShare, errorRate, guardrail } = tuner.state().incumbent;
  assert.deepEqual({ maxShare, errorRate, guardrail }, { maxShare: 0.9, errorRate: 0, guardrail: "share" });
  // Just as concentrated with better TTFT: a tie on the violation is rejected.
  const tie = closeWindow(tuner, 2, 10, spread(2, 50, 9));
  assert.deepEqual([tie.guardrail, tie.accepted, tie.incumbentGuardrail], ["share", false, "share"]);
  // More concentrated: rejected.
  const worse = closeWindow(tuner, 3, 10, spread(3, 50, 10));
  assert.deepEqual([worse.guardrail, worse.accepted, worse.incumbentP95TtftMs], ["share", false, 100]);
});

test("against a violating incumbent the rules apply step by step, and the published rules return once it passes", () => {
  const tuner = new EsTuner(windowed({ seed: 1, window: 20, remeasureEvery: 50, guardrails: RAILS_ON }));
  closeWindow(tuner, 1, 20, spread(1, 100, 18)); // incumbent: share 0.9, TTFT 100
  // Spread out but 4 of 20 failed: errors rank before share, so this is worse, not better.
  const erroring = closeWindow(tuner, 2, 20, (i) => ({ ...spread(2, 80, 8)(i), ok: i >= 4 }));
  assert.deepEqual([erroring.guardrail, erroring.accepted, erroring.incumbentGuardrail], ["errors", false, "share"]);
  // Less concentrated (0.85) yet still over the cap, and slower: accepted as the lesser violation.
  const lesser = closeWindow(tuner, 3, 20, spread(3, 300, 17));
  assert.deepEqual([lesser.guardrail, lesser.accepted, lesser.incumbentGuardrail], ["share", true, "share"]);
  assert.equal(lesser.incumbentP95TtftMs, 300);
  assert.equal(tuner.state().incumbent.maxShare, 0.85);
  // Passing the absolute guardrails with far worse TTFT and E2E (5000 ms against 1300 ms): accepted,
  // since a violating incumbent's E2E is no reference.
  const healthy = closeWindow(tuner, 4, 20, spread(4, 900, 8, { e2eMs: 5000 }));
  assert.deepEqual([healthy.guardrail, healthy.accepted, healthy.incumbentGuardrail], ["pass", true, "pass"]);
  // Now the incumbent is healthy, the published rules are back: E2E above (1 + g) × 5000 is rejected ...
  const slow = closeWindow(tuner, 5, 20, spread(5, 500, 8, { e2eMs: 6300 }));
  assert.deepEqual([slow.guardrail, slow.accepted], ["e2e", false]);
  // ... a concentrating candidate is rejected however fast ...
  const hack = closeWindow(tuner, 6, 20, spread(6, 10, 18));
  assert.deepEqual([hack.guardrail, hack.accepted, hack.incumbentGuardrail], ["share", false, "pass"]);
  // ... and a passing one must beat the incumbent's TTFT.
  const slower = closeWindow(tuner, 7, 20, spread(7, 950, 8, { e2eMs: 5000 }));
  assert.deepEqual([slower.guardrail, slower.accepted], ["pass", false]);
});

test("an incumbent that starts failing on re-measurement is flagged; fewer errors win; a window with no first token never does", () => {
  const tuner = new EsTuner(windowed({ seed: 2, window: 10, remeasureEvery: 2, guardrails: RAILS_ON }));
  closeWindow(tuner, 1, 10, spread(1, 100, 4));
  closeWindow(tuner, 2, 10, spread(2, 200, 4)); // rejected on TTFT
  closeWindow(tuner, 3, 10, spread(3, 200, 4)); // rejected on TTFT; a re-measurement is due
  assert.equal(tuner.current().role, "remeasure");
  const remeasure = closeWindow(tuner, 4, 10, (i) => ({ ...spread(4, 100, 4)(i), ok: i >= 3 }));
  assert.deepEqual([remeasure.kind, remeasure.errorRate, remeasure.incumbentGuardrail], ["remeasure", 0.3, "errors"]);
  // No first token at all (yet every request ok): no error excess, but it cannot be compared, so it never wins.
  const empty = closeWindow(tuner, 5, 10, spread(5, 0, 4, { ttftMs: null }));
  assert.deepEqual([empty.guardrail, empty.accepted, empty.incumbentGuardrail], ["errors", false, "errors"]);
  // Fewer errors (0.1), even though it also breaks the share cap: accepted, error excess ranks first.
  const fewerErrors = closeWindow(tuner, 6, 10, (i) => ({ ...spread(6, 400, 9)(i), ok: i >= 1 }));
  assert.equal(fewerErrors.kind, "candidate");
  assert.deepEqual([fewerErrors.guardrail, fewerErrors.accepted, fewerErrors.incumbentGuardrail], ["errors", true, "errors"]);
  assert.equal(tuner.state().incumbent.errorRate, 0.1);
});

test("a fleet where nothing passes never converges: σ stays at σ0/2 or above", () => {
  const tuner = new EsTuner(windowed({ seed: 4, window: 10, guardrails: RAILS_ON }));
  let version = 0;
  let ttft = 100;
  const steps: TunerStep[] = [];
  for (let i = 0; i < 80; i++) {
    version++;
    // Always 9 of 10 on one replica and ever slower: previously σ collapsed within ~15 windows.
    steps.push(closeWindow(tuner, version, 10, spread(version, (ttft += 1), 9)));
  }
  assert.ok(steps.every((step) => !step.converged && step.incumbentGuardrail === "share"));
  assert.ok(steps.every((step) => step.sigma >= 0.25));
  assert.equal(tuner.converged, false);
});

test("state round-trips mid-escape, and a state saved before the incumbent guardrail existed still restores", () => {
  const original = new EsTuner(windowed({ seed: 8, bounds: HACK_BOUNDS, guardrails: RAILS_ON }), HACKED_START);
  drive(original, hackedFleet, { seed: 88, maxSteps: 3 });
  assert.equal(original.state().incumbent.guardrail, "share", "still on the hack when saved");
  original.bind(10_000);
  feed(original, 50, (i) => sample(10_000, 300 + i, { replicaId: "near" }));
  const saved = JSON.parse(JSON.stringify(original.state())) as TunerState;
  const restored = EsTuner.restore(saved);
  assert.deepEqual(restored.state(), original.state());
  assert.deepEqual(restored.current(), original.current());
  const continueOriginal = drive(original, hackedFleet, { seed: 9, maxSteps: 40 });
  const continueRestored = drive(restored, hackedFleet, { seed: 9, maxSteps: 40 });
  assert.deepEqual(continueRestored, continueOriginal);
  assert.deepEqual(restored.state(), original.state());
  assert.ok(
    continueOriginal.some((step) => step.incumbentGuardrail === "pass"),
    "the restored tuner climbs out as well",
  );

  // A legacy state: no guardrail fields on the incumbent or in the trajectory.
  const legacy = JSON.parse(JSON.stringify(saved)) as { incumbent: Record<string, unknown>; trajectory: Record<string, unknown>[] };
  for (const key of ["maxShare", "errorRate", "guardrail"]) delete legacy.incumbent[key];
  for (const step of legacy.trajectory) delete step["incumbentGuardrail"];
  const upgraded = EsTuner.restore(legacy as unknown as TunerState).state();
  assert.deepEqual(
    { maxShare: upgraded.incumbent.maxShare, errorRate: upgraded.incumbent.errorRate, guardrail: upgraded.incumbent.guardrail },
    { maxShare: null, errorRate: null, guardrail: "pass" },
  );
  assert.ok(upgraded.trajectory.every((step) => step.incumbentGuardrail === "pass"));
  assert.deepEqual(EsTuner.restore(JSON.parse(JSON.stringify(upgraded))).state(), upgraded);

  assert.throws(
    () => EsTuner.restore({ ...saved, incumbent: { ...saved.incumbent, guardrail: "e2e" as never } }),
    /^TunerInputError: state\.incumbent\.guardrail: /,
  );
});

test("an A/A trial where 8 % of requests in both arms succeed without a first token is no guardrail failure (the candidate alone was rejected on 'errors', which shrank σ)", () => {
  const tuner = new EsTuner({ seed: 5, trial: { baselineEvery: 0 } });
  const steps: TunerStep[] = [];
  for (let i = 0; i < 5000 && steps.length < 6; i++) {
    const t = tuner.current().trial;
    assert.ok(t);
    const sessionKey = `s${i}`;
    const arm = armOf(sessionKey, t.salt, t.share);
    const ttftMs = i % 25 < 2 ? null : 100 + ((i * 37) % 400);
    const step = tuner.observe({ configVersion: 1, ttftMs, e2eMs: 600, replicaId: `r${i % 3}`, ok: true, trialId: t.id, arm, sessionKey, triggered: true });
    if (step) steps.push(step);
  }
  assert.ok(steps.length > 0, "trials were decided");
  assert.deepEqual(
    steps.filter((s) => s.guardrail !== "pass").map((s) => s.trial?.reason),
    [],
  );
});
