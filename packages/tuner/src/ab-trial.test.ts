// A/B trials end to end on synthetic fleets whose answer is known: a flat fleet (every trial is an
// A/A trial) under drifting load, the noisy bowl, and the reward hack.
import { test } from "node:test";
import assert from "node:assert/strict";
import { EsTuner, armOf, type TunerStep } from "./index";
import { nextNormal, nextUniform } from "./prng";
import {
  bowlTtftMs,
  driftingBowl,
  driveTrials,
  flatDrifting,
  hackedFleet,
  HACK_BOUNDS,
  HACKED_START,
  OPTIMUM,
  sample,
  windowed,
  type TrialFleet,
} from "./test-helpers";

const FAST = { permutations: 199 };

test("a fresh online tuner starts a trial at once: incumbent weights for most sessions, a candidate for its share", () => {
  const tuner = new EsTuner({ seed: 1 });
  const current = tuner.current();
  assert.equal(current.role, "trial");
  assert.deepEqual(current.weights, { rtt: 0.5, queue: 0.1 });
  const trial = current.trial!;
  assert.equal(trial.share, 0.5);
  assert.match(trial.id, /^1-[0-9a-f]{8}$/);
  assert.equal(trial.salt, trial.id.slice(2));
  assert.notDeepEqual(trial.candidate, current.weights);
  assert.deepEqual(tuner.trial()!.samples, { incumbent: 0, candidate: 0 });
});

test("samples of another trial, or without an arm, are not counted", () => {
  const tuner = new EsTuner({ seed: 1, trial: { ...FAST, lookEvery: 10, maxSamples: 120 } });
  const id = tuner.current().trial!.id;
  for (let i = 0; i < 50; i++) {
    assert.equal(tuner.observe({ ...sample(1, 100), trialId: "1-deadbeef", arm: "candidate" }), null);
    assert.equal(tuner.observe({ ...sample(1, 100), trialId: id }), null);
    assert.equal(tuner.observe(sample(1, 100)), null);
  }
  assert.deepEqual(tuner.trial()!.samples, { incumbent: 0, candidate: 0 });
  assert.equal(tuner.current().trial!.id, id);
});

/** Every trial of 12 tuners (seeds 1–12), 5,000 requests each, on a fleet where the weights change nothing. */
function aaSteps(fleet: TrialFleet, requestSeed: number): TunerStep[] {
  const steps: TunerStep[] = [];
  for (let seed = 1; seed <= 12; seed++) {
    steps.push(...driveTrials(new EsTuner({ seed, trial: FAST }), fleet, { seed: requestSeed + seed, samples: 5000 }).steps);
  }
  return steps;
}

test("A/A: when the weights change nothing, trials under drifting load accept at most α of candidates; paper mode accepts many", () => {
  const steps = aaSteps(flatDrifting, 50);
  const decided = steps.length;
  const accepted = steps.filter((s) => s.accepted).length;
  assert.ok(decided >= 100, `${decided} trials`);
  assert.ok(accepted / decided <= 0.05, `false accepts: ${accepted} of ${decided}`);

  // The same fleet judged window after window: a lighter minute of load looks like a better candidate.
  const paper = new EsTuner(windowed({ seed: 1, window: 128 }));
  const { steps: windows } = driveTrials(paper, flatDrifting, { seed: 51, samples: 5000 });
  const candidates = windows.filter((s: TunerStep) => s.kind === "candidate");
  const paperAccepts = candidates.filter((s) => s.accepted).length / candidates.length;
  assert.ok(paperAccepts > 0.15, `paper mode accepted ${paperAccepts} of A/A candidates`);
});

test("on the drifting bowl, trials move a far start close to the optimum and never accept a worse incumbent by much", () => {
  const start = { rtt: 0.2, queue: 0.06 };
  assert.ok(bowlTtftMs(start) > 7 * bowlTtftMs(OPTIMUM));
  const finals: number[] = [];
  for (let seed = 1; seed <= 8; seed++) {
    const tuner = new EsTuner({ seed, trial: FAST }, start);
    const { steps } = driveTrials(tuner, driftingBowl, { seed: 80 + seed, samples: 6000 });
    const final = bowlTtftMs(tuner.current().weights) / bowlTtftMs(OPTIMUM);
    finals.push(final);
    assert.ok(final <= 2, `seed ${seed}: ${JSON.stringify(tuner.current().weights)} is ${final.toFixed(2)}× the optimum`);
    let previous = bowlTtftMs(start);
    for (const step of steps.filter((s) => s.accepted)) {
      const now = bowlTtftMs(step.incumbent);
      assert.ok(now <= 1.05 * previous, `seed ${seed} step ${step.step}: accepted ${now.toFixed(0)} over ${previous.toFixed(0)} ms`);
      previous = now;
    }
  }
  finals.sort((x, y) => x - y);
  assert.ok(finals[3]! <= 1.25, `median over seeds ${finals[3]!.toFixed(2)}× the optimum`);
});

test("every decided trial reports both arms' p95 with intervals, the p-value, the look's α and a readable reason", () => {
  const tuner = new EsTuner({ seed: 3, trial: FAST }, { rtt: 0.2, queue: 0.05 });
  const { steps } = driveTrials(tuner, driftingBowl, { seed: 3, samples: 3000 });
  assert.ok(steps.length > 3);
  for (const step of steps) {
    const t = step.trial!;
    assert.equal(step.kind, "trial");
    assert.ok(t.samples.incumbent > 0 && t.samples.candidate > 0);
    assert.equal(t.samples.incumbent + t.samples.candidate, step.samples);
    assert.ok(t.pBetter > 0 && t.pBetter <= 1 && t.alphaAtLook > 0 && t.alphaAtLook <= 0.05);
    assert.ok(t.p95Interval.candidate.lo === null || t.p95Interval.candidate.lo <= t.p95TtftMs.candidate!);
    assert.match(t.reason, /p95|guardrail|routed/);
    if (step.accepted) assert.ok(t.pBetter <= t.alphaAtLook && t.p95TtftMs.candidate! < t.p95TtftMs.incumbent!);
  }
  const live = tuner.trial()!;
  assert.equal(live.id, tuner.current().trial!.id);
});

test("guardrails in trials: a candidate that concentrates its arm on one replica is rejected, unless peers keep the fleet balanced", () => {
  // Candidate arm: everything on "near" and 30 % faster; the incumbent arm spreads over three replicas.
  const run = (peers: boolean) => {
    const tuner = new EsTuner({ seed: 4, trial: { ...FAST, lookEvery: 40, maxSamples: 400 } });
    const trial = tuner.current().trial!;
    let step: TunerStep | null = null;
    for (let i = 0; step === null && i < 400; i++) {
      const sessionKey = `s${i}`;
      const arm = armOf(sessionKey, trial.salt, trial.share);
      if (peers) for (const replica of ["far1", "far2", "far1", "far2"]) tuner.observePeer({ replicaId: replica });
      const ttft = (arm === "candidate" ? 700 : 1000) * (1 + (i % 7) / 10);
      step = tuner.observe({
        ...sample(1, ttft),
        trialId: trial.id,
        arm,
        sessionKey,
        replicaId: arm === "candidate" ? "near" : ["near", "far1", "far2"][i % 3]!,
      });
    }
    return step!;
  };
  const alone = run(false);
  assert.equal(alone.accepted, false);
  assert.equal(alone.guardrail, "share");
  assert.equal(alone.trial!.decision, "reject-guardrail");
  const inFleet = run(true);
  assert.equal(inFleet.guardrail, "pass");
  assert.equal(inFleet.accepted, true, inFleet.trial!.reason);
});

test("a tuner started on the reward hack climbs out in trials: the violating incumbent arm loses to a passing candidate", () => {
  for (let seed = 1; seed <= 10; seed++) {
    const tuner = new EsTuner({ seed, bounds: HACK_BOUNDS, trial: FAST }, HACKED_START);
    const { steps } = driveTrials(tuner, hackedFleet, { seed: 700 + seed, samples: 20_000 });
    const escaped = steps.findIndex((s) => s.incumbentGuardrail === "pass");
    assert.ok(escaped >= 0 && escaped < 40, `seed ${seed}: escaped after ${escaped + 1} trials`);
    for (const step of steps.slice(0, escaped)) assert.ok(step.sigma >= 0.5, `seed ${seed}: σ held at σ0/2 while violating`);
    // Once out, a violating candidate can win only by violating less than the incumbent's arm in the
    // same trial (an incumbent settled at the share cap flips in and out of it on sampling noise).
    for (const step of steps.slice(escaped)) {
      if (!step.accepted || step.guardrail === "pass") continue;
      assert.equal(step.trial!.decision, "accept-climb-out");
      assert.ok(step.trial!.maxShare.candidate < step.trial!.maxShare.incumbent, `seed ${seed} step ${step.step}: ${step.trial!.reason}`);
    }
  }
});

test("A/A at the share cap: an incumbent whose arm reads above the cap by chance keeps its place", () => {
  // The weights change nothing and one replica takes 80 % of the requests, so either arm reads just
  // above or just below the 0.8 cap from trial to trial. A climb-out is an acceptance, and needs
  // evidence like any other: on the arms' readings alone it took the incumbent's place in 139 of 361
  // trials here, on evidence in 4 of 264.
  const atShareCap: TrialFleet = (_weights, _t, rng) => {
    const ttftMs = 1000 * Math.exp(0.3 * nextNormal(rng));
    const replicaId = nextUniform(rng) < 0.8 ? "r0" : `r${1 + Math.floor(nextUniform(rng) * 2)}`;
    return { ttftMs, e2eMs: ttftMs + 2000, replicaId, ok: true };
  };
  const steps = aaSteps(atShareCap, 300);
  const decided = steps.length;
  const accepted = steps.filter((s) => s.accepted).length;
  const violating = steps.filter((s) => s.trial!.maxShare.incumbent > 0.8).length;
  assert.ok(decided >= 50 && violating >= 10, `${decided} trials, ${violating} with the incumbent arm over the cap`);
  assert.ok(accepted / decided <= 0.05, `false accepts: ${accepted} of ${decided}`);
});

test("state round-trips mid-trial: a restored tuner continues exactly like the original", () => {
  const original = new EsTuner({ seed: 42, trial: FAST }, { rtt: 0.2, queue: 0.05 });
  driveTrials(original, driftingBowl, { seed: 9, samples: 1234 });
  assert.ok(original.trial()!.samples.incumbent + original.trial()!.samples.candidate > 0, "a trial is half-way");
  const restored = EsTuner.restore(JSON.parse(JSON.stringify(original.state())));
  assert.deepEqual(restored.state(), original.state());
  const a = driveTrials(original, driftingBowl, { seed: 10, samples: 2000 });
  const b = driveTrials(restored, driftingBowl, { seed: 10, samples: 2000 });
  assert.deepEqual(b, a);
  assert.deepEqual(restored.current(), original.current());
});

test("stopping drops the trial and routes the incumbent; going online again starts a new trial", () => {
  const tuner = new EsTuner({ seed: 2, trial: FAST });
  const first = tuner.current().trial!.id;
  tuner.setMode("static");
  assert.deepEqual(tuner.current(), { weights: { rtt: 0.5, queue: 0.1 }, version: null, role: "incumbent", trial: null });
  assert.equal(tuner.trial(), null);
  tuner.setMode("online");
  const second = tuner.current().trial!;
  assert.notEqual(second.id, first);
  tuner.setMode("online");
  assert.equal(tuner.current().trial!.id, second.id, "re-asserting online keeps the running trial");
});

test("bad trial settings and samples are refused with the field named", () => {
  assert.throws(() => new EsTuner({ seed: 1, trial: { share: 1 } as never }), /trial\.share: expected a number in \(0, 1\)/);
  assert.throws(() => new EsTuner({ seed: 1, trial: { lookEvery: 100, maxSamples: 50 } as never }), /trial\.maxSamples: must be >= trial\.lookEvery/);
  // A cap under which the smaller arm never holds the 59 samples an acceptance needs: every trial
  // would end rejected (measured: 102 trials, none accepted, σ shrinking on the rejections).
  assert.throws(() => new EsTuner({ seed: 1, trial: { lookEvery: 50, maxSamples: 100 } as never }), /trial\.maxSamples: must be at least 118 with share 0\.5/);
  assert.throws(() => new EsTuner({ seed: 1, trial: { share: 0.1, maxSamples: 500 } as never }), /must be at least 590 with share 0\.1/);
  // A state saved before that rule goes on at the smallest cap that can decide, rather than being lost.
  const saved = new EsTuner({ seed: 1 }).state();
  const restored = EsTuner.restore({ ...saved, config: { ...saved.config, trial: { ...saved.config.trial, maxSamples: 40 } } });
  assert.equal(restored.state().config.trial.maxSamples, 118);
  assert.throws(() => new EsTuner({ seed: 1, trial: { alpha: 0 } as never }), /trial\.alpha/);
  const tuner = new EsTuner({ seed: 1 });
  assert.throws(() => tuner.observe({ ...sample(1, 10), arm: "b" as never }), /sample\.arm/);
  assert.throws(() => tuner.observe({ ...sample(1, 10), triggered: "yes" as never }), /sample\.triggered/);
  assert.throws(() => tuner.observePeer({ replicaId: 3 as never }), /sample\.replicaId/);
});

test("a state persisted before trials (format /1, versioned) continues in A/B mode from its incumbent and σ", () => {
  const v2 = new EsTuner({ seed: 9 }, { rtt: 1.5, queue: 0.2 }).state();
  const v1 = {
    ...v2,
    format: "meridian.tuner-state/1",
    config: { ...v2.config, evaluation: "versioned" },
    current: { weights: { rtt: 2, queue: 0.3 }, version: 12, role: "candidate" },
    window: [sample(12, 100)],
    sigma: 0.7,
  } as unknown as Parameters<typeof EsTuner.restore>[0];
  delete (v1 as unknown as Record<string, unknown>).trial;
  delete (v1 as unknown as Record<string, unknown>).trialsStarted;
  const restored = EsTuner.restore(v1);
  const state = restored.state();
  assert.equal(state.format, "meridian.tuner-state/2");
  assert.equal(state.config.evaluation, "ab");
  assert.equal(state.sigma, 0.7);
  assert.deepEqual(restored.current().weights, { rtt: 1.5, queue: 0.2 }, "the incumbent routes; the old candidate is dropped");
  assert.ok(restored.current().trial !== null, "online: a trial starts at once");
  assert.deepEqual(state.window, []);
});

test("a p95 is not won on a handful of requests: an arm needs 59 triggered requests before its candidate may be accepted", () => {
  // Triggered requests take 3 s under the incumbent's weights and 1 s under the candidate's (every
  // other request takes 1 s either way); only every `every`-th request is triggered.
  const run = (every: number) => {
    const tuner = new EsTuner({ seed: 4, trial: { ...FAST, maxSamples: 500 } });
    const steps: TunerStep[] = [];
    for (let t = 0; t < 3000; t++) {
      const trial = tuner.current().trial!;
      const sessionKey = `s-${t}`;
      const arm = armOf(sessionKey, trial.salt, trial.share);
      const triggered = t % every === 0;
      const ttftMs = arm === "incumbent" && triggered ? 3000 + (t % 7) : 1000 + (t % 7);
      const step = tuner.observe({ ...sample(1, ttftMs), trialId: trial.id, arm, sessionKey, triggered });
      if (step) steps.push(step);
    }
    return steps;
  };
  const rare = run(10); // ~25 triggered requests per arm by the cap: undecidable
  assert.ok(rare.length >= 4, `${rare.length} trials`);
  assert.equal(rare.filter((s) => s.accepted).length, 0);
  // Stopped as soon as the rate of triggered requests says the cap will not bring 59 per arm.
  assert.ok(
    rare.every((s) => s.trial!.decision === "reject-futile" && s.samples <= 100),
    JSON.stringify(rare.map((s) => [s.trial!.decision, s.samples])),
  );
  assert.match(rare[0]!.trial!.reason, /undecidable by the cap: .* fewer than the 59 a p95 needs/);
  const common = run(2); // ~125 per arm by the cap
  assert.ok(
    common.some((s) => s.accepted),
    "with enough triggered requests the faster candidate wins",
  );
});

test("weights that win under one load and lose under the next are undone: every 4th trial challenges the incumbent with the initial weights", () => {
  const start = { rtt: 0.2, queue: 0.06 };
  // Until request 6,000 the bowl's optimum is far from the start; then the start becomes the optimum.
  const shiftAt = 6000;
  const centredOnStart = (w: { rtt: number; queue: number }) => 1000 * (1 + 2 * Math.log(w.rtt / start.rtt) ** 2 + 2 * Math.log(w.queue / start.queue) ** 2);
  const shifting: TrialFleet = (weights, t, rng) => {
    const ttftMs = (t < shiftAt ? bowlTtftMs(weights) : centredOnStart(weights)) * Math.exp(0.3 * nextNormal(rng));
    return { ttftMs, e2eMs: ttftMs + 2000, replicaId: `r${t % 3}`, ok: true };
  };
  const tuner = new EsTuner({ seed: 5, trial: FAST }, start);
  const { steps, stepAt } = driveTrials(tuner, shifting, { seed: 5, samples: 12_000 });
  const before = steps.filter((_, i) => stepAt[i]! <= shiftAt);
  assert.ok(
    before.some((s) => s.accepted),
    "the tuner moved away from the start before the shift",
  );
  assert.ok(
    before.filter((s) => s.trial!.baseline).every((s) => !s.accepted),
    "before the shift the start never wins back",
  );
  const undone = steps.find((s, i) => stepAt[i]! > shiftAt && s.trial!.baseline === true && s.accepted);
  assert.ok(undone, "after the shift a baseline check wins");
  assert.deepEqual(undone.incumbent, start);
  assert.match(undone.trial!.reason, /^baseline check, the initial weights against the incumbent: /);
  // Baseline checks are every 4th trial and only while the incumbent differs from the start.
  for (const step of steps) if (step.trial!.baseline) assert.equal(Number(step.trial!.id.split("-")[0]) % 4, 0);
});

/** A tuner whose running (first, not baseline) trial pits `candidate` against `incumbent`, started from the defaults. */
function trialOf(incumbent: { rtt: number; queue: number }, candidate: { rtt: number; queue: number }): EsTuner {
  const state = new EsTuner({ seed: 1, trial: FAST }).state();
  state.incumbent.weights = { ...incumbent };
  state.current.weights = { ...incumbent };
  state.trial!.candidate = { ...candidate };
  state.current.trial!.candidate = { ...candidate };
  return EsTuner.restore(state);
}

/** Feeds requests that every arm routes to the same replica (none triggered) until a trial is decided. */
function decideUntriggered(tuner: EsTuner): TunerStep {
  for (let t = 0; t < 1000; t++) {
    const trial = tuner.current().trial!;
    const sessionKey = `s-${t}`;
    const arm = armOf(sessionKey, trial.salt, trial.share);
    const step = tuner.observe({ ...sample(1, 1000 + (t % 7)), trialId: trial.id, arm, sessionKey, triggered: false });
    if (step) return step;
  }
  throw new Error("no decision");
}

test("of two weight sets that route every request alike, the tuner keeps the one nearer its initial weights", () => {
  const far = { rtt: 50, queue: 0.05 };
  const near = { rtt: 5, queue: 0.05 };
  const back = decideUntriggered(trialOf(far, near));
  assert.equal(back.trial!.decision, "accept-equivalent");
  assert.ok(back.accepted);
  assert.deepEqual(back.incumbent, near);
  assert.match(back.trial!.reason, /equivalent \(0 of 50 requests would have gone elsewhere\) and closer to the initial weights/);
  // A tie-break, not a win: σ is left alone.
  assert.equal(back.sigma, new EsTuner({ seed: 1 }).sigma);

  const out = decideUntriggered(trialOf(near, far));
  assert.equal(out.trial!.decision, "reject-futile");
  assert.deepEqual(out.incumbent, near, "an equivalent farther from the start is not taken");
  const same = decideUntriggered(trialOf(near, near));
  assert.equal(same.trial!.decision, "reject-futile", "A/A: the incumbent itself is no nearer");
});

test("a candidate whose p95 over all requests is lower is not written off at half the cap when its triggered requests show no gain", () => {
  // Triggered requests: 900 ms under the incumbent's weights, 1,000 ms under the candidate's. Of the
  // incumbent arm's other requests, every 4th takes 5 s: its p95 is 5 s, the candidate's 1 s. The
  // triggered subset alone says "no improvement" (neither arm exceeds the pooled p95 there), and it
  // is chosen on the state each arm left behind, so it does not overrule the arms' own p95s.
  const tuner = new EsTuner({ seed: 2, trial: FAST });
  let decided: TunerStep | null = null;
  for (let t = 0; t < 1000 && decided === null; t++) {
    const trial = tuner.current().trial!;
    const sessionKey = `s-${t}`;
    const arm = armOf(sessionKey, trial.salt, trial.share);
    const triggered = t % 2 === 0;
    const ttftMs = triggered ? (arm === "incumbent" ? 900 : 1000) : arm === "incumbent" && t % 8 === 1 ? 5000 : 1000;
    decided = tuner.observe({ ...sample(1, ttftMs), trialId: trial.id, arm, sessionKey, triggered });
  }
  assert.ok(decided);
  assert.ok(decided.trial!.p95TtftMs.candidate! < decided.trial!.p95TtftMs.incumbent!, JSON.stringify(decided.trial!.p95TtftMs));
  assert.notEqual(decided.trial!.decision, "reject-futile", decided.trial!.reason);
  assert.equal(decided.samples, 500, "the trial runs to its cap");
  assert.equal(decided.trial!.decision, "reject-cap", "undecided at the cap: the incumbent stays");
});
