// The tuner's state as plain JSON (the console persists it, and EsTuner.restore continues from it)
// and the records it is made of. The (1+1)-ES that evolves it is es-tuner.ts; checking a persisted
// state is restore.ts.
import type { TunerConfig, TunerMode, Weights } from "./config";
import type { PrngState } from "./prng";
import type { TunerSample } from "./window";

/** What the weights currently being routed with are for. */
export type TunerRole =
  /** Not under measurement: static or manual mode, or converged. */
  | "incumbent"
  /** A mutated candidate being scored. */
  | "candidate"
  /** The incumbent being (re-)measured: at start, after a mode or bounds change, and every K candidate steps. */
  | "remeasure";

export type GuardrailVerdict = "pass" | "e2e" | "share" | "errors";

/**
 * The incumbent's own standing against the absolute guardrails (share cap, error-rate cap), from its
 * latest measurement. The E2E guardrail is relative to the incumbent, so it cannot apply to it.
 * "pass" when guardrails are off or the incumbent has not been measured yet.
 */
export type IncumbentGuardrail = "pass" | "share" | "errors";

export interface TunerStep {
  /** 1-based count of closed windows. */
  step: number;
  kind: "candidate" | "remeasure";
  /** Weights the window was routed with. */
  weights: Weights;
  /** Fitness is −p95 TTFT; this is the p95 itself (lower is better). */
  fitnessP95TtftMs: number;
  e2eP95Ms: number;
  maxShare: number;
  errorRate: number;
  samples: number;
  /** candidate: it became the incumbent. remeasure: always true (the fresh measurement replaced the stored one). */
  accepted: boolean;
  /**
   * The candidate's own guardrail verdict; always "pass" for remeasure steps and when guardrails are off.
   * Normally a non-"pass" verdict means the candidate was rejected outright. The exception: while the
   * incumbent itself violates an absolute guardrail (see `incumbentGuardrail`), a candidate that also
   * violates is accepted when it violates less, so `accepted` may be true with "share" or "errors".
   */
  guardrail: GuardrailVerdict;
  /** σ after this step's adaptation. */
  sigma: number;
  /** Incumbent after this step. */
  incumbent: Weights;
  incumbentP95TtftMs: number;
  /**
   * Whether the incumbent after this step violates an absolute guardrail in its latest window (its own,
   * measured when it was accepted or re-measured). While it is not "pass" (only possible with guardrails on):
   * - a candidate that passes the absolute guardrails is accepted whatever its TTFT, and the E2E guardrail
   *   is not applied (a violating incumbent's E2E is no trustworthy reference);
   * - a candidate that also violates is accepted only when it violates less: lower error-rate excess over
   *   its cap first, then lower max-share excess over its cap (a tie is rejected; TTFT does not count);
   * - failed candidates do not shrink σ, σ stays at σ0/2 or above, and the tuner never reports converged,
   *   so it cannot pin hacked weights.
   * Absent in trajectories persisted before this field existed (EsTuner.restore fills in "pass").
   */
  incumbentGuardrail: IncumbentGuardrail;
  converged: boolean;
  /** Config version the window was scored on (versioned), or the version bound when it closed (paper). */
  configVersion: number | null;
}

export interface TunerCurrent {
  weights: Weights;
  version: number | null;
  role: TunerRole;
}

export interface IncumbentRecord {
  weights: Weights;
  /** null until first measured. */
  p95TtftMs: number | null;
  e2eP95Ms: number | null;
  /** Max replica share and error rate of the incumbent's latest window; null until first measured. */
  maxShare: number | null;
  errorRate: number | null;
  /** See TunerStep.incumbentGuardrail. */
  guardrail: IncumbentGuardrail;
}

/** An incumbent record for weights not measured yet. */
export function unmeasured(weights: Weights): IncumbentRecord {
  return { weights: { ...weights }, p95TtftMs: null, e2eP95Ms: null, maxShare: null, errorRate: null, guardrail: "pass" };
}

/** Everything a tuner is, as plain JSON: `EsTuner.restore(JSON.parse(JSON.stringify(state)))` continues identically. */
export interface TunerState {
  format: typeof TUNER_STATE_FORMAT;
  config: TunerConfig;
  /** Weights `reset()` returns to. */
  initial: Weights;
  mode: TunerMode;
  prng: PrngState;
  sigma: number;
  converged: boolean;
  /** Closed windows so far. */
  step: number;
  incumbent: IncumbentRecord;
  manualWeights: Weights | null;
  /** What current() returns. */
  current: TunerCurrent;
  /** versioned: samples of the current version. paper: the trailing window of all samples. */
  window: TunerSample[];
  /** paper: samples since the last evaluation. */
  samplesSinceEvaluation: number;
  /** Recent candidate outcomes for the 1/5 rule (true = accepted), oldest first. */
  outcomes: boolean[];
  candidatesSinceRemeasure: number;
  trajectory: TunerStep[];
}

export const TUNER_STATE_FORMAT = "meridian.tuner-state/1";

/** A deep copy of plain JSON (the state or any part of it): what leaves the tuner cannot alter it. */
export function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
