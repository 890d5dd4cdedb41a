import { test } from "node:test";
import assert from "node:assert/strict";
import { WEIGHT_BOUNDS as DEFAULT_BOUNDS } from "@meridian/routing/types";
import { EsTuner, TunerInputError, type TunerStep, type Weights } from "./index";
import { bowlTtftMs, drive, feed, noisyBowl, OPTIMUM, sample } from "./test-helpers";
import { windowed } from "./test-helpers";

function withinBounds(weights: Weights, bounds = DEFAULT_BOUNDS): boolean {
  return weights.rtt >= bounds.rtt[0] && weights.rtt <= bounds.rtt[1] && weights.queue >= bounds.queue[0] && weights.queue <= bounds.queue[1];
}

/** Closes one window of `count` samples under a fresh version with the given per-sample fields. */
function closeWindow(tuner: EsTuner, version: number, count: number, make: (i: number) => Parameters<EsTuner["observe"]>[0]): TunerStep {
  tuner.bind(version);
  const steps = feed(tuner, count, make);
  assert.equal(steps.length, 1, "exactly one window closes");
  return steps[0]!;
}

test("starts by measuring the initial weights, then proposes a candidate", () => {
  const tuner = new EsTuner(windowed({ seed: 1, window: 4 }));
  assert.deepEqual(tuner.current(), { weights: { rtt: 0.5, queue: 0.1 }, version: null, role: "remeasure", trial: null });
  const first = closeWindow(tuner, 1, 4, () => sample(1, 800));
  assert.equal(first.kind, "remeasure");
  assert.equal(first.fitnessP95TtftMs, 800);
  assert.equal(first.incumbentP95TtftMs, 800);
  assert.equal(tuner.current().role, "candidate");
  assert.equal(tuner.current().version, null, "the candidate is not published yet");
  assert.notDeepEqual(tuner.current().weights, first.weights);
});

test("mutations always stay within the bounds, even with a huge step size", () => {
  const bounds = { rtt: [0.1, 0.3] as const, queue: [0.2, 0.25] as const };
  const tuner = new EsTuner(windowed({ seed: 7, window: 2, sigma0: 5, sigmaMax: 50, bounds }), { rtt: 0.2, queue: 0.2 });
  let version = 0;
  let ttft = 1000;
  for (let i = 0; i < 200; i++) {
    const { weights } = tuner.current();
    assert.ok(withinBounds(weights, bounds), `step ${i}: ${JSON.stringify(weights)} out of bounds`);
    version++;
    // Always improving: candidates keep being accepted so σ stays large.
    closeWindow(tuner, version, 2, () => sample(version, (ttft -= 1)));
  }
});

test("σ rises on a run of successes and falls on a run of failures", () => {
  const improving = new EsTuner(windowed({ seed: 3, window: 8, sigmaMax: 100 }));
  let ttft = 10_000;
  let version = 0;
  const rising: TunerStep[] = [];
  for (let i = 0; i < 8; i++) {
    version++;
    rising.push(closeWindow(improving, version, 8, () => sample(version, (ttft -= 10))));
  }
  const risingCandidates = rising.filter((step) => step.kind === "candidate");
  assert.ok(risingCandidates.length >= 5);
  assert.ok(risingCandidates.every((step) => step.accepted));
  for (let i = 1; i < risingCandidates.length; i++) assert.ok(risingCandidates[i]!.sigma > risingCandidates[i - 1]!.sigma);
  assert.ok(risingCandidates[0]!.sigma > 0.5);

  const worsening = new EsTuner(windowed({ seed: 3, window: 8 }));
  ttft = 100;
  version = 0;
  const falling: TunerStep[] = [];
  for (let i = 0; i < 6; i++) {
    version++;
    falling.push(closeWindow(worsening, version, 8, () => sample(version, (ttft += 10))));
  }
  const fallingCandidates = falling.filter((step) => step.kind === "candidate");
  assert.ok(fallingCandidates.every((step) => !step.accepted));
  assert.ok(fallingCandidates[0]!.sigma < 0.5);
  for (let i = 1; i < fallingCandidates.length; i++) assert.ok(fallingCandidates[i]!.sigma < fallingCandidates[i - 1]!.sigma);
});

test("a run of failures converges: σ below σ_min pins the incumbent and stops stepping", () => {
  const tuner = new EsTuner(windowed({ seed: 11, window: 4 }), { rtt: 0.3, queue: 0.3 });
  let ttft = 100;
  let version = 0;
  const steps: TunerStep[] = [];
  while (!tuner.converged && steps.length < 100) {
    version++;
    steps.push(closeWindow(tuner, version, 4, () => sample(version, (ttft += 1))));
  }
  const last = steps.at(-1)!;
  assert.equal(last.converged, true);
  assert.ok(last.sigma < 0.05);
  // 0.5 × 0.817^n < 0.05 needs n = 12 failed candidates, plus the baseline and the re-measurements.
  assert.equal(steps.filter((step) => step.kind === "candidate").length, 12);
  assert.deepEqual(tuner.current(), { weights: { rtt: 0.3, queue: 0.3 }, version: null, role: "incumbent", trial: null });
  tuner.bind(version + 1);
  assert.equal(feed(tuner, 50, () => sample(version + 1, 1)).length, 0, "no more steps once converged");
  assert.equal(tuner.state().converged, true);
});

test("the incumbent is re-measured every K candidate steps and the fresh value replaces the lucky one", () => {
  const tuner = new EsTuner(windowed({ seed: 5, window: 4, remeasureEvery: 2 }));
  let version = 1;
  // A lucky first measurement: 100 ms. Every later window is slower.
  const baseline = closeWindow(tuner, version, 4, () => sample(version, 100));
  assert.equal(baseline.kind, "remeasure");
  const kinds: string[] = [];
  let remeasure: TunerStep | undefined;
  for (let i = 0; i < 3; i++) {
    version++;
    const step = closeWindow(tuner, version, 4, () => sample(version, 500));
    kinds.push(step.kind);
    if (step.kind === "remeasure") remeasure = step;
  }
  assert.deepEqual(kinds, ["candidate", "candidate", "remeasure"]);
  assert.equal(remeasure!.accepted, true);
  assert.equal(remeasure!.incumbentP95TtftMs, 500, "the lucky 100 ms no longer holds the lead");
  assert.deepEqual(remeasure!.weights, baseline.weights);
});

test("on a noisy objective with a known optimum it converges within 10% of the optimum", () => {
  const start = { rtt: 0.2, queue: 0.05 };
  const optimumTtft = bowlTtftMs(OPTIMUM);
  assert.ok(bowlTtftMs(start) > 1.9 * optimumTtft, "the start is far off, so convergence is a real result");
  // Every seed, not a lucky one: the (1+1)-ES under noise stops where σ runs out, so judge the worst case.
  for (let seed = 1; seed <= 20; seed++) {
    const tuner = new EsTuner(windowed({ seed }), start);
    const steps = drive(tuner, noisyBowl, { seed: 1000 + seed, maxSteps: 400 });
    assert.ok(tuner.converged, `seed ${seed}: converged within 400 windows (took ${steps.length})`);
    const final = tuner.current().weights;
    assert.deepEqual(final, steps.at(-1)!.incumbent, "converged weights are the incumbent");
    const achieved = bowlTtftMs(final);
    assert.ok(
      achieved <= 1.1 * optimumTtft,
      `seed ${seed}: final weights ${JSON.stringify(final)} give ${achieved.toFixed(0)} ms vs optimum ${optimumTtft} ms`,
    );
  }
});

test("a guardrail rejects a candidate that puts >80% of requests on one replica even when its TTFT is best", () => {
  const concentrate = (guardrailsEnabled: boolean): TunerStep => {
    const tuner = new EsTuner(
      windowed({ seed: 9, window: 10, guardrails: { enabled: guardrailsEnabled, e2eTolerance: 0.25, maxShare: 0.8, maxErrorRate: 0.05 } }),
    );
    closeWindow(tuner, 1, 10, (i) => sample(1, 1000, { replicaId: `r${i % 3}` }));
    // 9 of 10 on r0 (share 0.9), TTFT far better, E2E unchanged.
    return closeWindow(tuner, 2, 10, (i) => sample(2, 200, { replicaId: i === 0 ? "r1" : "r0", e2eMs: 2000 }));
  };
  const guarded = concentrate(true);
  assert.equal(guarded.kind, "candidate");
  assert.equal(guarded.guardrail, "share");
  assert.equal(guarded.accepted, false);
  assert.equal(guarded.maxShare, 0.9);
  assert.equal(guarded.incumbentP95TtftMs, 1000);
  const unguarded = concentrate(false);
  assert.equal(unguarded.guardrail, "pass");
  assert.equal(unguarded.accepted, true, "without guardrails the reward hack wins (GORGO Appendix D)");
});

test("guardrails reject E2E blow-ups and error rates above the cap", () => {
  const tuner = new EsTuner(windowed({ seed: 9, window: 20 }));
  closeWindow(tuner, 1, 20, (i) => sample(1, 1000, { e2eMs: 4000, replicaId: `r${i % 3}` }));
  const slow = closeWindow(tuner, 2, 20, (i) => sample(2, 500, { e2eMs: 5001, replicaId: `r${i % 3}` }));
  assert.equal(slow.guardrail, "e2e");
  assert.equal(slow.accepted, false);
  const failing = closeWindow(tuner, 3, 20, (i) => sample(3, 500, { ok: i >= 2, replicaId: `r${i % 3}` }));
  assert.equal(failing.errorRate, 0.1);
  assert.equal(failing.guardrail, "errors");
  const fine = closeWindow(tuner, 4, 20, (i) => sample(4, 500, { e2eMs: 5000, replicaId: `r${i % 3}` }));
  assert.equal(fine.guardrail, "pass", "exactly (1 + g) × incumbent E2E is allowed");
  assert.equal(fine.accepted, true);
});

test("a tuner restored from JSON state makes the same proposals as the original", () => {
  const original = new EsTuner(windowed({ seed: 42 }));
  drive(original, noisyBowl, { seed: 99, maxSteps: 7 });
  leavePartialWindow(original);
  const restored = EsTuner.restore(JSON.parse(JSON.stringify(original.state())));
  assert.deepEqual(restored.state(), original.state());
  assert.deepEqual(restored.current(), original.current());
  const continueOriginal = drive(original, noisyBowl, { seed: 7, maxSteps: 10 });
  const continueRestored = drive(restored, noisyBowl, { seed: 7, maxSteps: 10 });
  assert.deepEqual(continueRestored, continueOriginal);
  assert.deepEqual(restored.current(), original.current());
  assert.deepEqual(restored.trajectory(), original.trajectory());

  // Same seed, same history → same first proposal; another seed → another proposal.
  const twinA = new EsTuner(windowed({ seed: 42, window: 4 }));
  const twinB = new EsTuner(windowed({ seed: 42, window: 4 }));
  const other = new EsTuner(windowed({ seed: 43, window: 4 }));
  for (const tuner of [twinA, twinB, other]) closeWindow(tuner, 1, 4, () => sample(1, 100));
  assert.deepEqual(twinA.current(), twinB.current());
  assert.notDeepEqual(twinA.current().weights, other.current().weights);
});

/** Leaves a half-filled window so restore must carry the collected samples too. */
function leavePartialWindow(tuner: EsTuner): void {
  tuner.bind(10_000);
  feed(tuner, 50, (i) => sample(10_000, 900 + i));
}

test("paper mode scores the trailing 128 samples every 32, regardless of version", () => {
  const tuner = new EsTuner({ seed: 4, evaluation: "paper" });
  assert.equal(tuner.state().config.window, 128);
  assert.equal(tuner.state().config.hop, 32);
  // Unbound, mixed versions: all count.
  const warmup = feed(tuner, 127, (i) => sample(i % 5, i));
  assert.equal(warmup.length, 0);
  const first = feed(tuner, 1, () => sample(0, 127));
  assert.equal(first.length, 1);
  assert.equal(first[0]!.samples, 128);
  assert.equal(first[0]!.kind, "remeasure");
  // Samples 0..127 → nearest-rank p95 = ceil(0.95·128) = 122nd value = 121.
  assert.equal(first[0]!.fitnessP95TtftMs, 121);
  tuner.bind(3);
  assert.equal(feed(tuner, 31, (i) => sample(1, 128 + i)).length, 0);
  const second = feed(tuner, 1, () => sample(1, 159));
  assert.equal(second.length, 1);
  // Trailing window is now samples 32..159 → p95 = 32 + 121.
  assert.equal(second[0]!.fitnessP95TtftMs, 153);
  assert.equal(second[0]!.samples, 128);
  assert.equal(second[0]!.kind, "candidate");
  assert.equal(second[0]!.configVersion, 3);
  const more = feed(tuner, 320, (i) => sample(2, 10 + (i % 7)));
  assert.equal(more.length, 10, "one step per 32 samples");
});

test("static mode freezes the weights; manual mode routes the operator's weights", () => {
  const tuner = new EsTuner(windowed({ seed: 1, window: 4, mode: "static" }), { rtt: 1, queue: 0.2 });
  assert.deepEqual(tuner.current(), { weights: { rtt: 1, queue: 0.2 }, version: null, role: "incumbent", trial: null });
  tuner.bind(1);
  assert.equal(feed(tuner, 40, () => sample(1, 5)).length, 0);
  tuner.setManualWeights({ rtt: 0.7, queue: 0.3 });
  assert.equal(tuner.mode, "manual");
  assert.deepEqual(tuner.current().weights, { rtt: 0.7, queue: 0.3 });
  assert.equal(feed(tuner, 40, () => sample(1, 5)).length, 0);
  // Going online starts from the operator's weights and measures them first.
  tuner.setMode("online");
  assert.deepEqual(tuner.current(), { weights: { rtt: 0.7, queue: 0.3 }, version: null, role: "remeasure", trial: null });
  const step = closeWindow(tuner, 2, 4, () => sample(2, 5));
  assert.equal(step.kind, "remeasure");
  assert.deepEqual(step.incumbent, { rtt: 0.7, queue: 0.3 });
});

test('setMode("online") while tuning keeps the window; after convergence it restarts tuning', () => {
  const tuner = new EsTuner(windowed({ seed: 3, window: 4 }));
  tuner.bind(1);
  feed(tuner, 3, () => sample(1, 100));
  tuner.setMode("online");
  assert.equal(feed(tuner, 1, () => sample(1, 100)).length, 1, "the 3 samples already collected still count");

  const converging = new EsTuner(windowed({ seed: 3, window: 2, sigma0: 0.06 }));
  let version = 0;
  let ttft = 10;
  while (!converging.converged) {
    version++;
    closeWindow(converging, version, 2, () => sample(version, (ttft += 1)));
  }
  converging.setMode("online");
  assert.equal(converging.converged, false);
  assert.equal(converging.sigma, 0.06, "σ restarts at σ0");
  assert.equal(converging.current().role, "remeasure");
});

test("setBounds clips the incumbent and drops a candidate under measurement; reset starts over", () => {
  const tuner = new EsTuner(windowed({ seed: 8, window: 4 }), { rtt: 1.5, queue: 0.1 });
  closeWindow(tuner, 1, 4, () => sample(1, 100));
  assert.equal(tuner.current().role, "candidate");
  tuner.setBounds({ rtt: [0.1, 1], queue: [0.05, 0.5] });
  assert.deepEqual(tuner.current(), { weights: { rtt: 1, queue: 0.1 }, version: null, role: "remeasure", trial: null });
  assert.deepEqual(tuner.state().config.bounds.rtt, [0.1, 1]);
  tuner.reset();
  const state = tuner.state();
  assert.equal(state.step, 0);
  assert.deepEqual(state.trajectory, []);
  assert.equal(state.sigma, 0.5);
  assert.deepEqual(state.current.weights, { rtt: 1, queue: 0.1 }, "initial weights clipped to the new bounds");
  assert.deepEqual(state.initial, { rtt: 1.5, queue: 0.1 });
  // The state still restores even though `initial` is outside the narrowed bounds.
  assert.deepEqual(EsTuner.restore(JSON.parse(JSON.stringify(state))).state(), state);
});

test("setBounds: σ0 and σmax derived from the box follow a new box; ones set by hand stay", () => {
  const derived = new EsTuner({ seed: 3 });
  assert.ok(derived.sigma > 1.5, `σ0 of the default box: ${derived.sigma}`);
  derived.setBounds({ rtt: [0.5, 0.55], queue: [0.09, 0.1] });
  const narrow = derived.state();
  assert.ok(narrow.config.sigmaMax <= 0.1 && narrow.sigma <= narrow.config.sigmaMax, `σ ${narrow.sigma}, σmax ${narrow.config.sigmaMax}`);
  assert.equal(narrow.config.sigma0, 0.1, "σ0 keeps its floor");
  const byHand = new EsTuner({ seed: 3, sigma0: 0.7, sigmaMax: 0.9 });
  byHand.setBounds({ rtt: [0.5, 0.55], queue: [0.09, 0.1] });
  assert.deepEqual([byHand.state().config.sigma0, byHand.state().config.sigmaMax, byHand.sigma], [0.7, 0.9, 0.7]);
});

test("trajectory is bounded", () => {
  const tuner = new EsTuner(windowed({ seed: 1, window: 1, maxTrajectory: 5, sigmaMin: 1e-9 }));
  tuner.bind(1);
  for (let version = 1; version <= 20; version++) {
    tuner.bind(version);
    tuner.observe(sample(version, 100 + version));
  }
  const trajectory = tuner.trajectory();
  assert.equal(trajectory.length, 5);
  assert.equal(trajectory.at(-1)!.step, 20);
});

test("bad input throws TunerInputError naming the field", () => {
  const expectError = (action: () => unknown, field: string, pattern?: RegExp) =>
    assert.throws(action, (error: unknown) => {
      assert.ok(error instanceof TunerInputError, String(error));
      assert.equal(error.field, field);
      assert.ok(error.message.startsWith(`${field}: `), error.message);
      if (pattern) assert.match(error.message, pattern);
      return true;
    });
  expectError(() => new EsTuner(windowed({ seed: 1 }), { rtt: Number.NaN, queue: 0.1 }), "initial.rtt", /received NaN/);
  expectError(() => new EsTuner(windowed({ seed: 1 }), { rtt: 5, queue: 0.1 }), "initial.rtt", /outside the bounds \[0\.05, 2\]/);
  expectError(() => new EsTuner(windowed({ seed: 1, window: 0 })), "window", /integer >= 1, received 0/);
  expectError(() => new EsTuner(windowed({ seed: 1, window: 2.5 })), "window");
  expectError(() => new EsTuner({ seed: 1, evaluation: "paper", hop: 200 }), "hop");
  expectError(() => new EsTuner(windowed({ seed: Number.NaN })), "seed");
  expectError(
    () => new EsTuner(windowed({ seed: 1, bounds: { rtt: [2, 0.05], queue: [0.05, 0.5] } })),
    "bounds.rtt",
    /lower bound 2 is above upper bound 0.05/,
  );
  expectError(() => new EsTuner(windowed({ seed: 1, bounds: { rtt: [0, 1], queue: [0.05, 0.5] } })), "bounds.rtt[0]");
  expectError(
    () => new EsTuner(windowed({ seed: 1, guardrails: { enabled: true, e2eTolerance: 0.25, maxShare: 1.5, maxErrorRate: 0.05 } })),
    "guardrails.maxShare",
  );

  const tuner = new EsTuner(windowed({ seed: 1 }));
  expectError(() => tuner.setManualWeights({ rtt: 0.5, queue: 0.9 }), "weights.queue", /0.9 is outside the bounds \[0.05, 0.5\]/);
  expectError(() => tuner.setManualWeights({ rtt: Number.POSITIVE_INFINITY, queue: 0.1 }), "weights.rtt");
  expectError(() => tuner.setBounds({ rtt: [0.05, 2], queue: [0.5, 0.05] }), "bounds.queue");
  expectError(() => tuner.setMode("auto" as never), "mode");
  expectError(() => tuner.bind(-1), "configVersion");
  expectError(() => tuner.observe({ ...sample(1, 10), e2eMs: Number.NaN }), "sample.e2eMs");
  expectError(() => tuner.observe({ ...sample(1, 10), ttftMs: -3 }), "sample.ttftMs");
  expectError(() => tuner.observe({ ...sample(1, 10), ok: "yes" as never }), "sample.ok");
  expectError(() => EsTuner.restore({ ...tuner.state(), format: "other" as never }), "state.format");
  expectError(() => EsTuner.restore({ ...tuner.state(), prng: [1, 2] as never }), "state.prng");
  // A rejected call leaves the tuner as it was.
  assert.equal(tuner.mode, "online");
  assert.deepEqual(tuner.current().weights, { rtt: 0.5, queue: 0.1 });
});

test("a window with no first token at all never wins, guardrails or not", () => {
  const tuner = new EsTuner(windowed({ seed: 1, window: 4, guardrails: { enabled: false, e2eTolerance: 0.25, maxShare: 0.8, maxErrorRate: 0.05 } }));
  closeWindow(tuner, 1, 4, () => sample(1, 1000));
  const empty = closeWindow(tuner, 2, 4, () => sample(2, null, { e2eMs: 5, ok: false }));
  assert.equal(empty.accepted, false);
  assert.equal(empty.guardrail, "errors");
  assert.equal(empty.fitnessP95TtftMs, 5, "E2E p95 stands in so the step still carries a number");
});
