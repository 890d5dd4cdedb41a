// Shared drivers for the tuner tests: a synthetic fleet whose p95 TTFT is a known function of the weights.
import { EsTuner, type TunerStep, type TunerSample, type Weights } from "./index";
import { nextNormal, nextUniform, seedPrng, type PrngState } from "./prng";

export type SampleSource = (weights: Weights, version: number, rng: PrngState) => TunerSample;

/** Publishes current() under a fresh version, feeds samples until a window closes, returns the step. */
export function runOneWindow(tuner: EsTuner, source: SampleSource, rng: PrngState, nextVersion: () => number): TunerStep {
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
