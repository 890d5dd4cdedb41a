import { test } from "node:test";
import assert from "node:assert/strict";
import { nextNormal, nextUniform, seedPrng, type PrngState } from "../prng";
import { analyzeTrial, type TrialSample } from "./analysis";
import { armOf } from "./arm";

function uniformOf(rng: PrngState): () => number {
  return () => nextUniform(rng);
}

const OPTIONS = { share: 0.5, permutations: 499, confidence: 0.95, cuped: false };

/** Requests of `sessions` two-turn sessions; `ttft(arm, rng, i)` draws each latency. */
function trial(
  rng: PrngState,
  sessions: number,
  ttft: (arm: TrialSample["arm"], rng: PrngState) => number,
  extra: (arm: TrialSample["arm"], i: number) => Partial<TrialSample> = () => ({}),
): TrialSample[] {
  const samples: TrialSample[] = [];
  for (let s = 0; s < sessions; s++) {
    const sessionKey = `s${s}`;
    const arm = armOf(sessionKey, "salt", 0.5);
    for (let k = 0; k < 2; k++)
      samples.push({ arm, ttftMs: ttft(arm, rng), e2eMs: 1000, replicaId: `r${samples.length % 3}`, ok: true, sessionKey, ...extra(arm, samples.length) });
  }
  return samples;
}

test("a candidate whose whole distribution is 30 % faster wins the p95 test; each arm's p95 and interval are reported", () => {
  const rng = seedPrng(1);
  const samples = trial(rng, 300, (arm, r) => Math.exp(6 + 0.5 * nextNormal(r)) * (arm === "candidate" ? 0.7 : 1));
  const a = analyzeTrial(samples, { ...OPTIONS, uniform: uniformOf(rng) });
  assert.ok(a.p95.pBetter < 0.01, `p ${a.p95.pBetter}`);
  assert.ok(a.candidate.p95TtftMs! < a.incumbent.p95TtftMs!);
  assert.ok(a.incumbent.p95Interval.lo! <= a.incumbent.p95TtftMs! && a.incumbent.p95TtftMs! <= a.incumbent.p95Interval.hi!);
  assert.ok(a.logTtft.pBetter < 0.01);
  assert.equal(a.candidate.samples + a.incumbent.samples, 600);
});

test("the p95 test is about the tail: a faster median with the same tail is not evidence", () => {
  // Candidate: 80 % of requests 40 % faster, but its slowest 20 % exactly as slow as the incumbent's.
  let small = 0;
  const reps = 60;
  for (let r = 0; r < reps; r++) {
    const rng = seedPrng(100 + r);
    const samples = trial(rng, 200, (arm, g) => {
      const base = Math.exp(6 + 0.4 * nextNormal(g));
      const tail = nextUniform(g) < 0.2;
      return tail ? 3 * base : arm === "candidate" ? 0.6 * base : base;
    });
    const a = analyzeTrial(samples, { ...OPTIONS, permutations: 199, uniform: uniformOf(rng) });
    if (a.p95.pBetter <= 0.05) small++;
    if (r === 0) assert.ok(a.logTtft.pBetter < 0.05, "the median-sensitive companion does see the body move");
  }
  assert.ok(small / reps <= 0.1, `p95 test fooled ${small} of ${reps} times`);
});

test("triggered analysis: requests routed the same way under both weights add noise, not signal, and are left out", () => {
  let triggeredWins = 0;
  let allWins = 0;
  const reps = 40;
  for (let r = 0; r < reps; r++) {
    const rng = seedPrng(200 + r);
    // 80 % of requests would go to the same replica under either weights: same distribution in both arms.
    const samples = trial(
      rng,
      400,
      () => 0,
      () => ({}),
    ).map((s) => {
      const triggered = nextUniform(rng) < 0.2;
      const speed = triggered && s.arm === "candidate" ? 0.6 : 1;
      return { ...s, triggered, ttftMs: Math.exp(6 + 0.5 * nextNormal(rng)) * speed };
    });
    const withTrigger = analyzeTrial(samples, { ...OPTIONS, permutations: 199, uniform: uniformOf(rng) });
    const withoutTrigger = analyzeTrial(
      samples.map(({ triggered: _t, ...rest }) => rest),
      { ...OPTIONS, permutations: 199, uniform: uniformOf(rng) },
    );
    assert.equal(withTrigger.triggeredSamples, samples.filter((s) => s.triggered).length);
    if (withTrigger.p95.pBetter <= 0.05) triggeredWins++;
    if (withoutTrigger.p95.pBetter <= 0.05) allWins++;
  }
  assert.ok(triggeredWins > allWins, `triggered ${triggeredWins} vs all ${allWins} detections out of ${reps}`);
});

test("CUPED on prompt length removes the variance prompt length explains, and keeps the test calibrated", () => {
  let adjustedWins = 0;
  let rawWins = 0;
  let nullRejections = 0;
  const reps = 60;
  for (let r = 0; r < reps; r++) {
    const rng = seedPrng(300 + r);
    const draw = (effect: number) =>
      trial(
        rng,
        250,
        () => 0,
        () => ({}),
      ).map((s) => {
        const inputTokens = Math.round(Math.exp(6 + 1.2 * nextNormal(rng)));
        return { ...s, inputTokens, ttftMs: (inputTokens / 10) * Math.exp(0.3 * nextNormal(rng)) * (s.arm === "candidate" ? effect : 1) };
      });
    const shifted = draw(0.8);
    const adjusted = analyzeTrial(shifted, { ...OPTIONS, cuped: true, permutations: 199, uniform: uniformOf(rng) });
    const raw = analyzeTrial(shifted, { ...OPTIONS, cuped: false, permutations: 199, uniform: uniformOf(rng) });
    assert.ok(adjusted.cupedVarianceReduction! > 0.1, `variance reduction ${adjusted.cupedVarianceReduction}`);
    if (adjusted.p95.pBetter <= 0.05) adjustedWins++;
    if (raw.p95.pBetter <= 0.05) rawWins++;
    if (analyzeTrial(draw(1), { ...OPTIONS, cuped: true, permutations: 199, uniform: uniformOf(rng) }).p95.pBetter <= 0.05) nullRejections++;
  }
  assert.ok(adjustedWins > rawWins, `CUPED ${adjustedWins} vs raw ${rawWins} detections of ${reps}`);
  assert.ok(nullRejections / reps <= 0.1, `null rejections ${nullRejections} of ${reps}`);
});

test("shares project onto the fleet: an LB sending all its traffic to its local replica is fine when peers send theirs elsewhere", () => {
  const rng = seedPrng(9);
  const samples = trial(rng, 100, () => 500).map((s) => ({ ...s, replicaId: s.arm === "candidate" ? "local" : s.replicaId }));
  const alone = analyzeTrial(samples, { ...OPTIONS, uniform: uniformOf(rng) });
  assert.equal(alone.candidate.maxShare, 1);
  const inFleet = analyzeTrial(samples, { ...OPTIONS, uniform: uniformOf(rng), peerReplicaCounts: { "remote-a": 200, "remote-b": 200 } });
  assert.ok(Math.abs(inFleet.candidate.maxShare - 200 / 600) < 1e-9, `projected ${inFleet.candidate.maxShare}`);
  assert.ok(inFleet.incumbent.maxShare < 0.4);
});

test("requests without a first token count as slower than any latency", () => {
  const rng = seedPrng(4);
  const samples = trial(rng, 100, () => 100).map((s, i) => ({ ...s, ttftMs: s.arm === "candidate" && i % 4 === 0 ? null : s.ttftMs }));
  const a = analyzeTrial(samples, { ...OPTIONS, uniform: uniformOf(rng) });
  assert.equal(a.candidate.p95TtftMs, null, "over 5 % of the candidate's requests had no first token");
  assert.ok(a.p95.pWorse < 0.01);
});
