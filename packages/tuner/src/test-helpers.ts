// Shared drivers for the tuner tests: a synthetic fleet whose p95 TTFT is a known function of the weights.
import type { EsTuner, TunerStep, TunerSample, Weights } from "./index";
import { nextNormal, nextUniform, seedPrng, type PrngState } from "./prng";

export type SampleSource = (weights: Weights, version: number, rng: PrngState) => TunerSample;

/** Publishes current() under a fresh version, feeds samples until a window closes, returns the step. */
function runOneWindow(tuner: EsTuner, source: SampleSource, rng: PrngState, nextVersion: () => number): TunerStep {
  const { weights } = tuner.current();
  const version = nextVersion();
  tuner.bind(version);
  for (let i = 0; i < 100_000; i++) {
    const step = tuner.observe(source(weights, version, rng));
    if (step !== null) return step;
  }
  throw new Error("window never closed");
}

export function drive(tuner: EsTuner, source: SampleSource, options: { seed: number; maxSteps: number }): TunerStep[] {
  const rng = seedPrng(options.seed);
  let version = 0;
  const steps: TunerStep[] = [];
  while (steps.length < options.maxSteps && tuner.mode === "online" && !tuner.converged) {
    steps.push(runOneWindow(tuner, source, rng, () => ++version));
  }
  return steps;
}

export const OPTIMUM: Weights = { rtt: 0.8, queue: 0.2 };

/** Noise-free TTFT scale of the synthetic fleet: a log-quadratic bowl, minimum 1000 ms at OPTIMUM. */
export function bowlTtftMs(weights: Weights): number {
  const rttError = Math.log(weights.rtt / OPTIMUM.rtt);
  const queueError = Math.log(weights.queue / OPTIMUM.queue);
  return 1000 * (1 + 2 * rttError ** 2 + 2 * queueError ** 2);
}

/** Per-request lognormal noise (σ = 0.1) around the bowl, spread at random over three replicas. */
export const noisyBowl: SampleSource = (weights, version, rng) => {
  const ttftMs = bowlTtftMs(weights) * Math.exp(0.1 * nextNormal(rng));
  return { configVersion: version, ttftMs, e2eMs: ttftMs + 2000, replicaId: `r${Math.floor(nextUniform(rng) * 3)}`, ok: true };
};

let sampleCounter = 0;

/** A healthy sample; consecutive samples rotate over three replicas so no share guardrail trips by accident. */
export function sample(configVersion: number, ttftMs: number | null, extra: Partial<TunerSample> = {}): TunerSample {
  sampleCounter++;
  return { configVersion, ttftMs, e2eMs: (ttftMs ?? 0) + 1000, replicaId: `r${sampleCounter % 3}`, ok: true, ...extra };
}

/** Feeds `count` samples, returning every step that closed. */
export function feed(tuner: EsTuner, count: number, make: (index: number) => TunerSample): TunerStep[] {
  const steps: TunerStep[] = [];
  for (let i = 0; i < count; i++) {
    const step = tuner.observe(make(i));
    if (step !== null) steps.push(step);
  }
  return steps;
}

/** Bounds that reach down to the reward hack: W_queue may go as low as 1e-4. */
export const HACK_BOUNDS = { rtt: [0.05, 2.0], queue: [0.0001, 0.5] } as const;
/** The GORGO Appendix-D weights: queue at its floor, so the nearest replica takes nearly everything. */
export const HACKED_START: Weights = { rtt: 0.5, queue: 0.0001 };

/**
 * Expected share of the nearest replica: 0.99 at the queue floor, falling linearly in ln W_queue to an
 * even third at W_queue = 0.1. It crosses the 0.8 cap at W_queue ≈ 1.2e-3, so a tuner at the floor
 * has to climb ≈2.5 in log space to get out.
 */
export function hackNearestShare(weights: Weights): number {
  const climbed = Math.log(weights.queue / HACK_BOUNDS.queue[0]) / Math.log(0.1 / HACK_BOUNDS.queue[0]);
  return 0.99 - (0.99 - 1 / 3) * Math.min(Math.max(climbed, 0), 1);
}

/** Noise-free TTFT scale: concentrating load looks *better* (lower W_queue → lower TTFT), the hack's lure. */
function hackTtftMs(weights: Weights): number {
  return 200 * (weights.queue / HACK_BOUNDS.queue[0]) ** 0.3 * (1 + 0.5 * Math.log(weights.rtt / OPTIMUM.rtt) ** 2);
}

/**
 * A fleet with the reward hack built in: TTFT rewards W_queue → 0 while the nearest replica's share
 * rises past the cap, and E2E tracks TTFT, so a hacked incumbent also sets a deceptively low E2E bar.
 */
export const hackedFleet: SampleSource = (weights, version, rng) => {
  const ttftMs = hackTtftMs(weights) * Math.exp(0.1 * nextNormal(rng));
  const nearest = nextUniform(rng) < hackNearestShare(weights);
  const replicaId = nearest ? "near" : nextUniform(rng) < 0.5 ? "far1" : "far2";
  return { configVersion: version, ttftMs, e2eMs: 3 * ttftMs, replicaId, ok: true };
};
