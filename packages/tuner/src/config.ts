// The weights, their defaults and their default bounds have one home, routing's contract module
// (constants and types only, so the tuner still runs no routing code).
import { WEIGHT_BOUNDS, type Weights } from "@meridian/routing/types";
import { armSamplesToDecide, smallestDecidableCap } from "./trial/decidable";

export type { Weights };

export type WeightName = keyof Weights;
export const WEIGHT_NAMES: readonly WeightName[] = ["rtt", "queue"];

/** Inclusive [lo, hi] per weight; lo > 0 because mutation works in log space. */
export type WeightBounds = Record<WeightName, readonly [number, number]>;

/** `online`: the ES steps on telemetry. `static`: weights fixed. `manual`: the operator sets them. */
export const TUNER_MODES = ["online", "static", "manual"] as const;
export type TunerMode = (typeof TUNER_MODES)[number];
/**
 * `ab` (default): concurrent A/B trials — each LB routes a share of sessions with the candidate's
 * weights and the rest with the incumbent's, and the candidate wins only on evidence (README.md).
 * `paper`: the trailing window regardless of version, scored every `hop` samples (GORGO as published).
 */
export const EVALUATION_MODES = ["ab", "paper"] as const;
export type EvaluationMode = (typeof EVALUATION_MODES)[number];

/** A/B trial settings (evaluation "ab"). */
export interface TrialConfig {
  /** Fraction of sessions routed with the candidate's weights, in (0, 1). */
  share: number;
  /** Valid samples (both arms) between looks at the evidence. */
  lookEvery: number;
  /** Sample cap: a trial still undecided here is rejected (the incumbent stays). */
  maxSamples: number;
  /** Bound on the probability that a trial accepts a candidate no better than the incumbent, over all its looks. */
  alpha: number;
  /** Power of the alpha-spending function α·t^ρ (1 spends evenly over the looks). */
  spendingRho: number;
  /** Reject early when the candidate is slower with a p-value at or below this. */
  futilityP: number;
  /** Re-randomizations per look. */
  permutations: number;
  /** Coverage of the per-arm p95 intervals. */
  confidence: number;
  /** CUPED-adjust the exceedance indicator on log prompt tokens. */
  cuped: boolean;
  /** Decide on triggered samples only (those the other arm's weights would have routed elsewhere). */
  triggeredOnly: boolean;
  /** After a losing candidate, try its mirror image next (search.ts). */
  mirroredSampling: boolean;
  /** After a winning candidate, try the same step again from the new incumbent (search.ts). */
  repeatSuccess: boolean;
  /**
   * Every this many trials, while the incumbent has moved away from the tuner's initial weights, the
   * challenger is the initial weights themselves (0: never). Weights that won under one load can
   * lose under the next; this trial is how the tuner notices that it now does harm, and undoes it.
   */
  baselineEvery: number;
}

export interface GuardrailConfig {
  enabled: boolean;
  /** g: reject when candidate E2E p95 > (1 + g) × incumbent E2E p95. */
  e2eTolerance: number;
  /** Reject when any replica serves more than this fraction of the window (1 disables it, e.g. for one replica). */
  maxShare: number;
  /** Reject when more than this fraction of the window failed. */
  maxErrorRate: number;
}

export interface TunerConfig {
  seed: number;
  mode: TunerMode;
  evaluation: EvaluationMode;
  /** `paper` mode: samples per evaluation window. */
  window: number;
  /** `paper` mode: evaluate every `hop` samples. */
  hop: number;
  /** `ab` mode: the trials. */
  trial: TrialConfig;
  bounds: WeightBounds;
  /** Initial step size in log space. Default: a quarter of the bounds' log-width (sigmaForBounds). */
  sigma0: number;
  /** σ below this means converged. */
  sigmaMin: number;
  /** Upper limit on σ. Default: half the bounds' log-width; beyond that a larger σ only produces clipped corners. */
  sigmaMax: number;
  /** Outcomes the 1/5 rule looks back over. */
  successHistory: number;
  targetSuccessRate: number;
  /** σ is multiplied by this on a low success rate and divided by it on a high one. */
  sigmaFactor: number;
  /** `paper` mode: re-measure the incumbent after this many candidate steps. */
  remeasureEvery: number;
  guardrails: GuardrailConfig;
  /** Steps kept in the state's trajectory (oldest dropped first). */
  maxTrajectory: number;
}

/**
 * Step sizes that scale with the search box: σ0 = ¼ and σmax = ½ of the larger log-width
 * ln(hi/lo). Where in the box the optimum lies is not known in advance, and evolution strategies
 * start with σ at a fifth to a third of the range for that case (CMA-ES's guidance is 0.3×), so the
 * first candidates can reach across the box; the 1/5 rule shrinks σ once trials find it too long.
 * Measured on the short-prompt regime: σ0 = 0.6, 1.0 and 1.5 left the tuner 1.2–2.2× the optimum
 * after half the trace, where σ0 ≈ 2.3–3.2 reached it (packages/tuner/README.md).
 */
export function sigmaForBounds(bounds: WeightBounds): { sigma0: number; sigmaMax: number } {
  const width = Math.max(...WEIGHT_NAMES.map((name) => Math.log(bounds[name][1] / bounds[name][0])));
  const sigma0 = Math.max(0.25 * width, 0.1);
  return { sigma0, sigmaMax: Math.max(0.5 * width, sigma0) };
}

export const DEFAULT_GUARDRAILS: GuardrailConfig = {
  enabled: true,
  e2eTolerance: 0.25,
  maxShare: 0.8,
  maxErrorRate: 0.05,
};

export const DEFAULT_TRIAL: TrialConfig = {
  share: 0.5,
  lookEvery: 50,
  maxSamples: 500,
  alpha: 0.05,
  spendingRho: 1,
  futilityP: 0.2,
  permutations: 999,
  confidence: 0.95,
  cuped: true,
  triggeredOnly: true,
  mirroredSampling: true,
  repeatSuccess: true,
  baselineEvery: 4,
};

export const DEFAULT_TUNER_CONFIG: Omit<TunerConfig, "seed"> = {
  mode: "online",
  evaluation: "ab",
  window: 128,
  hop: 32,
  trial: DEFAULT_TRIAL,
  bounds: WEIGHT_BOUNDS,
  ...sigmaForBounds(WEIGHT_BOUNDS),
  sigmaMin: 0.05,
  successHistory: 8,
  targetSuccessRate: 0.2,
  sigmaFactor: 0.817,
  remeasureEvery: 5,
  guardrails: DEFAULT_GUARDRAILS,
  maxTrajectory: 256,
};

/** Bad input from a caller (operator, console, simulator). The message starts with the offending field. */
export class TunerInputError extends Error {
  readonly field: string;
  constructor(field: string, problem: string) {
    super(`${field}: ${problem}`);
    this.name = "TunerInputError";
    this.field = field;
  }
}

function describe(value: unknown): string {
  if (typeof value === "number") return String(value); // JSON.stringify(NaN) would say "null"
  if (value === undefined) return "undefined";
  return JSON.stringify(value) ?? String(value);
}

export function requireFiniteNumber(field: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new TunerInputError(field, `expected a finite number, received ${describe(value)}`);
  }
  return value;
}

function requirePositive(field: string, value: unknown): number {
  const number = requireFiniteNumber(field, value);
  if (number <= 0) throw new TunerInputError(field, `expected a number > 0, received ${number}`);
  return number;
}

export function requireInteger(field: string, value: unknown, min: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min) {
    throw new TunerInputError(field, `expected an integer >= ${min}, received ${describe(value)}`);
  }
  return value;
}

function requireFraction(field: string, value: unknown): number {
  const number = requireFiniteNumber(field, value);
  if (number < 0 || number > 1) throw new TunerInputError(field, `expected a number in [0, 1], received ${number}`);
  return number;
}

function requireObject(field: string, value: unknown): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TunerInputError(field, `expected an object, received ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

export function validateWeights(field: string, value: unknown): Weights {
  const object = requireObject(field, value);
  return {
    rtt: requirePositive(`${field}.rtt`, object.rtt),
    queue: requirePositive(`${field}.queue`, object.queue),
  };
}

export function validateBounds(field: string, value: unknown): WeightBounds {
  const object = requireObject(field, value);
  const bounds = {} as Record<WeightName, readonly [number, number]>;
  for (const name of WEIGHT_NAMES) {
    const pair = object[name];
    if (!Array.isArray(pair) || pair.length !== 2) {
      throw new TunerInputError(`${field}.${name}`, `expected [lo, hi], received ${describe(pair)}`);
    }
    const lo = requirePositive(`${field}.${name}[0]`, pair[0]);
    const hi = requirePositive(`${field}.${name}[1]`, pair[1]);
    if (lo > hi) throw new TunerInputError(`${field}.${name}`, `lower bound ${lo} is above upper bound ${hi}`);
    bounds[name] = [lo, hi];
  }
  return bounds;
}

export function requireWithinBounds(field: string, weights: Weights, bounds: WeightBounds): void {
  for (const name of WEIGHT_NAMES) {
    const [lo, hi] = bounds[name];
    if (weights[name] < lo || weights[name] > hi) {
      throw new TunerInputError(`${field}.${name}`, `${weights[name]} is outside the bounds [${lo}, ${hi}]`);
    }
  }
}

/** Exactly the same weights (they travel as doubles through JSON and the database, which keep them exact). */
export function sameWeights(a: Weights, b: Weights): boolean {
  return a.rtt === b.rtt && a.queue === b.queue;
}

export function clipToBounds(weights: Weights, bounds: WeightBounds): Weights {
  return {
    rtt: Math.min(Math.max(weights.rtt, bounds.rtt[0]), bounds.rtt[1]),
    queue: Math.min(Math.max(weights.queue, bounds.queue[0]), bounds.queue[1]),
  };
}

const MODES: readonly string[] = TUNER_MODES;
const EVALUATIONS: readonly string[] = EVALUATION_MODES;

export function validateMode(field: string, value: unknown): TunerMode {
  if (typeof value !== "string" || !MODES.includes(value)) {
    throw new TunerInputError(field, `expected one of ${MODES.join(", ")}, received ${describe(value)}`);
  }
  return value as TunerMode;
}

/** What a caller may pass: any field, with the trial settings merged over their defaults one by one. */
export type TunerConfigInput = Partial<Omit<TunerConfig, "trial">> & { seed: number; trial?: Partial<TrialConfig> };

/** Merges `partial` over the defaults and validates every field. */
export function resolveConfig(partial: TunerConfigInput): TunerConfig {
  const input = requireObject("config", partial) as Partial<TunerConfig>;
  const bounds = input.bounds ?? WEIGHT_BOUNDS;
  const merged: TunerConfig = {
    ...DEFAULT_TUNER_CONFIG,
    // σ follows the bounds unless the caller sets it (validated below, before it is used).
    ...(Array.isArray(bounds?.rtt) && Array.isArray(bounds?.queue) && bounds.rtt[0] > 0 && bounds.queue[0] > 0 ? sigmaForBounds(bounds) : {}),
    ...input,
    seed: input.seed as number,
    guardrails: { ...DEFAULT_GUARDRAILS, ...(input.guardrails ?? {}) },
    trial: { ...DEFAULT_TRIAL, ...(input.trial ?? {}) },
    bounds: input.bounds ?? WEIGHT_BOUNDS,
  };
  if (!Number.isSafeInteger(merged.seed)) throw new TunerInputError("seed", `expected a safe integer, received ${describe(merged.seed)}`);
  validateMode("mode", merged.mode);
  if (!EVALUATIONS.includes(merged.evaluation as string)) {
    throw new TunerInputError("evaluation", `expected one of ${EVALUATIONS.join(", ")}, received ${describe(merged.evaluation)}`);
  }
  requireInteger("window", merged.window, 1);
  requireInteger("hop", merged.hop, 1);
  // hop only matters in paper mode; an A/B tuner with a small window must not trip over the default hop.
  if (merged.evaluation === "paper" && merged.hop > merged.window)
    throw new TunerInputError("hop", `must not exceed window (${merged.window}), received ${merged.hop}`);
  merged.bounds = validateBounds("bounds", merged.bounds);
  requirePositive("sigma0", merged.sigma0);
  requirePositive("sigmaMin", merged.sigmaMin);
  requirePositive("sigmaMax", merged.sigmaMax);
  if (merged.sigmaMax < merged.sigma0) throw new TunerInputError("sigmaMax", `must be >= sigma0 (${merged.sigma0}), received ${merged.sigmaMax}`);
  requireInteger("successHistory", merged.successHistory, 1);
  requireFraction("targetSuccessRate", merged.targetSuccessRate);
  const factor = requirePositive("sigmaFactor", merged.sigmaFactor);
  if (factor >= 1) throw new TunerInputError("sigmaFactor", `expected a number in (0, 1), received ${factor}`);
  requireInteger("remeasureEvery", merged.remeasureEvery, 1);
  requireInteger("maxTrajectory", merged.maxTrajectory, 0);
  validateTrial(requireObject("trial", merged.trial) as unknown as TrialConfig);
  const guardrails = requireObject("guardrails", merged.guardrails);
  if (typeof guardrails.enabled !== "boolean") {
    throw new TunerInputError("guardrails.enabled", `expected a boolean, received ${describe(guardrails.enabled)}`);
  }
  const tolerance = requireFiniteNumber("guardrails.e2eTolerance", guardrails.e2eTolerance);
  if (tolerance < 0) throw new TunerInputError("guardrails.e2eTolerance", `expected a number >= 0, received ${tolerance}`);
  requireFraction("guardrails.maxShare", guardrails.maxShare);
  requireFraction("guardrails.maxErrorRate", guardrails.maxErrorRate);
  return merged;
}

function requireOpenFraction(field: string, value: unknown): number {
  const number = requireFiniteNumber(field, value);
  if (number <= 0 || number >= 1) throw new TunerInputError(field, `expected a number in (0, 1), received ${number}`);
  return number;
}

function validateTrial(trial: TrialConfig): void {
  requireOpenFraction("trial.share", trial.share);
  requireInteger("trial.lookEvery", trial.lookEvery, 2);
  requireInteger("trial.maxSamples", trial.maxSamples, 2);
  if (trial.maxSamples < trial.lookEvery)
    throw new TunerInputError("trial.maxSamples", `must be >= trial.lookEvery (${trial.lookEvery}), received ${trial.maxSamples}`);
  requireOpenFraction("trial.alpha", trial.alpha);
  requireOpenFraction("trial.confidence", trial.confidence);
  // Below this cap the smaller arm never holds the samples an acceptance needs: every trial would end
  // rejected, and its rejections would still shrink σ.
  const smallest = smallestDecidableCap(trial);
  if (trial.maxSamples < smallest) {
    throw new TunerInputError(
      "trial.maxSamples",
      `must be at least ${smallest} with share ${trial.share}: an arm needs ${armSamplesToDecide(trial)} samples before a trial may accept, received ${trial.maxSamples}`,
    );
  }
  requirePositive("trial.spendingRho", trial.spendingRho);
  requireFraction("trial.futilityP", trial.futilityP);
  requireInteger("trial.permutations", trial.permutations, 1);
  if (typeof trial.cuped !== "boolean") throw new TunerInputError("trial.cuped", `expected a boolean, received ${describe(trial.cuped)}`);
  if (typeof trial.repeatSuccess !== "boolean")
    throw new TunerInputError("trial.repeatSuccess", `expected a boolean, received ${describe(trial.repeatSuccess)}`);
  if (typeof trial.mirroredSampling !== "boolean")
    throw new TunerInputError("trial.mirroredSampling", `expected a boolean, received ${describe(trial.mirroredSampling)}`);
  requireInteger("trial.baselineEvery", trial.baselineEvery, 0);
  if (typeof trial.triggeredOnly !== "boolean")
    throw new TunerInputError("trial.triggeredOnly", `expected a boolean, received ${describe(trial.triggeredOnly)}`);
}
