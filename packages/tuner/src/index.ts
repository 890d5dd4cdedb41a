export { EsTuner, type LiveTrial } from "./es-tuner";
export { TUNER_STATE_FORMAT } from "./state";
export type { TrialAssignment, TrialDecision, TrialReport, TunerCurrent, TunerRole, TunerState, TunerStep } from "./state";
export type { GuardrailVerdict, IncumbentGuardrail } from "./guardrails";
export {
  DEFAULT_GUARDRAILS,
  DEFAULT_TRIAL,
  DEFAULT_TUNER_CONFIG,
  EVALUATION_MODES,
  TUNER_MODES,
  TunerInputError,
  clipToBounds,
  resolveConfig,
  sameWeights,
  validateBounds,
  validateWeights,
} from "./config";
export type { EvaluationMode, GuardrailConfig, TrialConfig, TunerConfig, TunerConfigInput, TunerMode, WeightBounds, WeightName, Weights } from "./config";
export { summarizeWindow } from "./window";
export { eventRole, isClientSide, sampleFromEvent } from "./samples-from-events";
export type { ForwardEntryView, TunerTelemetry } from "./samples-from-events";
export type { TunerSample, WindowSummary } from "./window";
export { percentile, percentileOfSorted, quantileInterval } from "./stats/quantile";
export type { QuantileInterval } from "./stats/quantile";
export { randomizationTest } from "./stats/randomization";
export type { RandomizationResult, RandomizationUnit } from "./stats/randomization";
export { alphaForLook, alphaSpent } from "./stats/spending";
export { armOf, hashUnit } from "./trial/arm";
export type { Arm } from "./trial/arm";
export { analyzeTrial } from "./trial/analysis";
export type { ArmSummary, TrialAnalysis, TrialAnalysisOptions, TrialSample } from "./trial/analysis";
export type { PrngState } from "./prng";
