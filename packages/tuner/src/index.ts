export { EsTuner } from "./es-tuner";
export { TUNER_STATE_FORMAT } from "./state";
export type { GuardrailVerdict, IncumbentGuardrail, TunerCurrent, TunerRole, TunerState, TunerStep } from "./state";
export {
  DEFAULT_GUARDRAILS,
  DEFAULT_TUNER_CONFIG,
  EVALUATION_MODES,
  TUNER_MODES,
  TunerInputError,
  clipToBounds,
  validateBounds,
  validateWeights,
} from "./config";
export type { EvaluationMode, GuardrailConfig, TunerConfig, TunerMode, WeightBounds, WeightName, Weights } from "./config";
export { percentile, summarizeWindow } from "./window";
export type { TunerSample, WindowSummary } from "./window";
export type { PrngState } from "./prng";
