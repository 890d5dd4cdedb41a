// Restoring a persisted tuner state: shape checks with the offending field named, and the migration
// of states written before A/B trials existed (format /1, evaluation "versioned" or "paper").

import { DEFAULT_TRIAL, requireFiniteNumber, type TunerConfigInput, TunerInputError, validateMode, validateWeights } from "./config";
import { smallestDecidableCap } from "./trial/decidable";
import { startTrial } from "./ab-trial";
import { alphaSpent } from "./stats/spending";
import { TUNER_STATE_FORMAT, TUNER_STATE_FORMAT_V1, type IncumbentRecord, type TunerState } from "./state";

const INCUMBENT_GUARDRAILS = ["pass", "share", "errors"] as const;

/**
 * Format /1 → /2. `versioned` evaluation no longer exists: A/B trials replace it (they measure the
 * candidate and the incumbent in the same period instead of one after the other), so such a state
 * continues in `ab` mode from its incumbent, σ and trajectory. A paper-mode state stays in paper mode.
 */
export function migrateState(state: Record<string, unknown>): { state: TunerState; startTrial: boolean } {
  if (state.format === TUNER_STATE_FORMAT) return { state: state as unknown as TunerState, startTrial: false };
  if (state.format !== TUNER_STATE_FORMAT_V1) {
    throw new TunerInputError("state.format", `expected "${TUNER_STATE_FORMAT}", received ${JSON.stringify(state.format)}`);
  }
  const config = { ...(state.config as Record<string, unknown>) };
  const wasVersioned = config.evaluation !== "paper";
  if (wasVersioned) config.evaluation = "ab";
  const current = { ...(state.current as Record<string, unknown>), trial: null };
  const migrated = {
    ...(state as unknown as TunerState),
    format: TUNER_STATE_FORMAT,
    config: config as unknown as TunerState["config"],
    current: current as unknown as TunerState["current"],
    window: wasVersioned ? [] : ((state.window as TunerState["window"]) ?? []),
    trial: null,
    trialsStarted: 0,
    planned: null,
  } as TunerState;
  // A /1 state marked its pending measurement with role candidate/remeasure; ab mode starts a trial instead.
  return { state: migrated, startTrial: wasVersioned && state.mode === "online" };
}

/** A state saved before trial caps too small to ever accept were refused (trial/decidable.ts) goes on
 * at the smallest cap that can, rather than failing to restore and losing its run. New settings are
 * still refused: the console checks them as a fresh tuner's (tuner-live.ts). */
export function withDecidableCap(config: TunerConfigInput): TunerConfigInput {
  const trial = { ...DEFAULT_TRIAL, ...(config.trial ?? {}) };
  if (!(typeof trial.maxSamples === "number" && typeof trial.share === "number" && trial.share > 0 && trial.share < 1)) return config;
  const smallest = smallestDecidableCap(trial);
  return trial.maxSamples < smallest ? { ...config, trial: { ...config.trial, maxSamples: smallest } } : config;
}

function requirePositiveSigma(value: unknown): void {
  const sigma = requireFiniteNumber("state.sigma", value);
  if (sigma <= 0) throw new TunerInputError("state.sigma", `expected a number > 0, received ${sigma}`);
}

/** Checks a (copied, migrated) state and fills in fields older states lack. */
export function validateRestoredState(restored: TunerState, pendingTrial: boolean): TunerState {
  // `initial` may lie outside bounds narrowed later by setBounds, so it is checked only for shape.
  validateWeights("state.initial", restored.initial);
  validateMode("state.mode", restored.mode);
  validateWeights("state.incumbent.weights", restored.incumbent?.weights);
  validateWeights("state.current.weights", restored.current?.weights);
  if (!Array.isArray(restored.prng) || restored.prng.length !== 4 || !restored.prng.every((word) => Number.isInteger(word) && word >= 0 && word < 2 ** 32)) {
    throw new TunerInputError("state.prng", "expected four uint32 words");
  }
  requirePositiveSigma(restored.sigma);
  // States persisted before the incumbent guardrail existed lack these fields; treat such an incumbent
  // as passing (what the tuner then assumed) until its next measurement says otherwise.
  const incumbent = restored.incumbent as Partial<IncumbentRecord> & { weights: IncumbentRecord["weights"] };
  incumbent.p95TtftMs ??= null;
  incumbent.e2eP95Ms ??= null;
  incumbent.maxShare ??= null;
  incumbent.errorRate ??= null;
  incumbent.guardrail ??= "pass";
  if (!INCUMBENT_GUARDRAILS.includes(incumbent.guardrail)) {
    throw new TunerInputError(
      "state.incumbent.guardrail",
      `expected one of ${INCUMBENT_GUARDRAILS.join(", ")}, received ${JSON.stringify(incumbent.guardrail)}`,
    );
  }
  for (const field of ["trajectory", "outcomes", "window"] as const) {
    if (!Array.isArray(restored[field])) throw new TunerInputError(`state.${field}`, `expected an array, received ${typeof restored[field]}`);
  }
  for (const step of restored.trajectory) step.incumbentGuardrail ??= "pass";
  restored.current.trial ??= null;
  restored.trial ??= null;
  restored.trialsStarted ??= 0;
  restored.planned ??= null;
  restored.paused ??= null;
  if (restored.paused !== null && typeof restored.paused !== "string") {
    throw new TunerInputError("state.paused", `expected a string or null, received ${typeof restored.paused}`);
  }
  if (restored.trial !== null) {
    const trial = restored.trial;
    if (typeof trial.id !== "string" || typeof trial.salt !== "string" || !Array.isArray(trial.samples)) {
      throw new TunerInputError("state.trial", "expected a trial with id, salt and samples");
    }
    if (!(trial.share > 0 && trial.share < 1))
      throw new TunerInputError("state.trial.share", `expected a number in (0, 1), received ${JSON.stringify(trial.share)}`);
    const bad = trial.samples.findIndex(
      (sample) => sample === null || typeof sample !== "object" || (sample.arm !== "incumbent" && sample.arm !== "candidate"),
    );
    if (bad >= 0) throw new TunerInputError(`state.trial.samples[${bad}]`, "expected a sample of the incumbent or the candidate arm");
    validateWeights("state.trial.candidate", trial.candidate);
    trial.peerCounts ??= {};
    if (!Number.isInteger(trial.looks) || trial.looks < 0)
      throw new TunerInputError("state.trial.looks", `expected an integer >= 0, received ${JSON.stringify(trial.looks)}`);
    // States written before the trial kept what it spent: what its looks spent at this cadence.
    const { alpha, lookEvery, maxSamples, spendingRho } = restored.config.trial;
    trial.alphaSpent ??= alphaSpent(alpha, (trial.looks * lookEvery) / maxSamples, spendingRho);
    requireFiniteNumber("state.trial.alphaSpent", trial.alphaSpent);
  }
  // A state tuning online in A/B mode always has a trial running; one without (written by hand, or
  // cut short) would never start one again: setMode("online") is a no-op while online.
  const trialless = restored.mode === "online" && restored.config.evaluation === "ab" && restored.trial === null;
  if ((pendingTrial || trialless) && restored.paused === null) startTrial(restored);
  return restored;
}
