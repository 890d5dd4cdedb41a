// Shared drivers for the tuner tests: a synthetic fleet whose p95 TTFT is a known function of the weights.
import { PAPER_WEIGHT_BOUNDS as PAPER_BOUNDS } from "@meridian/routing/types";
import type { EsTuner, TunerStep, TunerSample, Weights } from "./index";
import { nextNormal, nextUniform, seedPrng, type PrngState } from "./prng";
import { armOf } from "./trial/arm";

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

/**
 * Window-by-window evaluation for the tests that pin the ES and guardrail logic: paper mode with
 * hop = window scores consecutive, non-overlapping windows, which is exactly what the drivers above
 * feed (one window per published weights).
 */
export function windowed<T extends { seed: number; window?: number; hop?: number; bounds?: unknown }>(
  config: T,
): T & { evaluation: "paper"; window: number; hop: number } {
  const window = config.window ?? 128;
  return { bounds: PAPER_BOUNDS, sigma0: 0.5, sigmaMax: 2, ...config, evaluation: "paper", window, hop: window };
}

/** What a synthetic fleet answers for one request routed with `weights` at request index `t`. */
export type TrialFleet = (weights: Weights, t: number, rng: PrngState) => Pick<TunerSample, "ttftMs" | "e2eMs" | "replicaId" | "ok">;

/**
 * Drives an A/B tuner over `samples` requests: sessions of `turns` consecutive requests, each routed
 * with the weights of the arm armOf() gives its session in the current trial, fed back tagged with
 * the trial and arm. `onPeer` lets a test add other LBs' requests for the fleet-share guardrail.
 */
export function driveTrials(
  tuner: EsTuner,
  fleet: TrialFleet,
  options: { seed: number; samples: number; turns?: number; onRequest?: (tuner: EsTuner, t: number) => void },
): { steps: TunerStep[]; stepAt: number[] } {
  const rng = seedPrng(options.seed);
  const turns = options.turns ?? 3;
  const steps: TunerStep[] = [];
  const stepAt: number[] = [];
  for (let t = 0; t < options.samples; t++) {
    const current = tuner.current();
    const trial = current.trial;
    const sessionKey = `s${options.seed}-${Math.floor(t / turns)}`;
    const arm = trial === null ? "incumbent" : armOf(sessionKey, trial.salt, trial.share);
    const weights = arm === "candidate" && trial !== null ? trial.candidate : current.weights;
    const triggered = trial !== null && (trial.candidate.rtt !== current.weights.rtt || trial.candidate.queue !== current.weights.queue);
    options.onRequest?.(tuner, t);
    const step = tuner.observe({ configVersion: 1, ...fleet(weights, t, rng), arm, sessionKey, triggered, ...(trial ? { trialId: trial.id } : {}) });
    if (step !== null) {
      steps.push(step);
      stepAt.push(t + 1);
    }
  }
  return { steps, stepAt };
}

/** Load that drifts by ±40 % over about 2,000 requests, common to every request at that moment. */
function driftingLoad(t: number): number {
  return 1 + 0.4 * Math.sin(t / 320);
}

/** The bowl under drifting load with lognormal noise (σ = 0.3) and three replicas. */
export const driftingBowl: TrialFleet = (weights, t, rng) => {
  const ttftMs = bowlTtftMs(weights) * driftingLoad(t) * Math.exp(0.3 * nextNormal(rng));
  return { ttftMs, e2eMs: ttftMs + 2000, replicaId: `r${Math.floor(nextUniform(rng) * 3)}`, ok: true };
};

/** Weights do not matter at all (every candidate is an A/A trial), but the load drifts. */
export const flatDrifting: TrialFleet = (_weights, t, rng) => {
  const ttftMs = 1000 * driftingLoad(t) * Math.exp(0.3 * nextNormal(rng));
  return { ttftMs, e2eMs: ttftMs + 2000, replicaId: `r${Math.floor(nextUniform(rng) * 3)}`, ok: true };
};
