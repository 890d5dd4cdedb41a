// Checking a persisted tuner state before EsTuner.restore continues from it: shape checks that name
// the offending field, and defaults for the fields added after states were first persisted.
import { requireFiniteNumber, resolveConfig, TunerInputError, validateMode, validateWeights, type Weights } from "./config";
import { copy, TUNER_STATE_FORMAT, type IncumbentGuardrail, type IncumbentRecord, type TunerState } from "./state";

const INCUMBENT_GUARDRAILS: readonly IncumbentGuardrail[] = ["pass", "share", "errors"];

/** A checked deep copy of `state` with its config resolved; throws TunerInputError naming the bad field. */
export function restoredState(state: TunerState): TunerState {
  if (typeof state !== "object" || state === null) throw new TunerInputError("state", "expected an object");
  if (state.format !== TUNER_STATE_FORMAT) {
    throw new TunerInputError("state.format", `expected "${TUNER_STATE_FORMAT}", received ${JSON.stringify(state.format)}`);
  }
  const config = resolveConfig(state.config);
  // `initial` may lie outside bounds narrowed later by setBounds, so it is checked only for shape.
  validateWeights("state.initial", state.initial);
  validateMode("state.mode", state.mode);
  validateWeights("state.incumbent.weights", state.incumbent?.weights);
  validateWeights("state.current.weights", state.current?.weights);
  if (!Array.isArray(state.prng) || state.prng.length !== 4 || !state.prng.every((word) => Number.isInteger(word) && word >= 0 && word < 2 ** 32)) {
    throw new TunerInputError("state.prng", "expected four uint32 words");
  }
  requirePositiveSigma(state.sigma);
  const restored = copy({ ...state, config });
  // States persisted before the incumbent guardrail existed lack these fields; treat such an incumbent
  // as passing (what the tuner then assumed) until its next re-measurement says otherwise.
  const incumbent = restored.incumbent as Partial<IncumbentRecord> & { weights: Weights };
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
  for (const step of restored.trajectory ?? []) step.incumbentGuardrail ??= "pass";
  return restored;
}

function requirePositiveSigma(value: unknown): void {
  const sigma = requireFiniteNumber("state.sigma", value);
  if (sigma <= 0) throw new TunerInputError("state.sigma", `expected a number > 0, received ${sigma}`);
}
