// The tuner: a (1+1)-ES over the GORGO cost weights (EsTuner, below). The plain-JSON state it evolves
// and its records are typed in state.ts; restore.ts checks a persisted state before it continues.
import {
  clipToBounds,
  requireFiniteNumber,
  requireInteger,
  requireWithinBounds,
  resolveConfig,
  TunerInputError,
  validateBounds,
  validateMode,
  validateWeights,
  WEIGHT_NAMES,
  type TunerConfig,
  type TunerMode,
  type WeightBounds,
  type Weights,
} from "./config";
import { DEFAULT_WEIGHTS } from "@meridian/routing/types";
import { nextNormal, seedPrng } from "./prng";
import { restoredState } from "./restore";
import {
  copy,
  TUNER_STATE_FORMAT,
  unmeasured,
  type GuardrailVerdict,
  type IncumbentGuardrail,
  type IncumbentRecord,
  type TunerCurrent,
  type TunerRole,
  type TunerState,
  type TunerStep,
} from "./state";
import { summarizeWindow, type TunerSample, type WindowSummary } from "./window";

function validateSample(value: unknown): TunerSample {
  if (typeof value !== "object" || value === null) {
    throw new TunerInputError("sample", `expected an object, received ${value === null ? "null" : typeof value}`);
  }
  const sample = value as Record<string, unknown>;
  requireInteger("sample.configVersion", sample.configVersion, 0);
  if (sample.ttftMs !== null) {
    const ttft = requireFiniteNumber("sample.ttftMs", sample.ttftMs);
    if (ttft < 0) throw new TunerInputError("sample.ttftMs", `expected a number >= 0 or null, received ${ttft}`);
  }
  const e2e = requireFiniteNumber("sample.e2eMs", sample.e2eMs);
  if (e2e < 0) throw new TunerInputError("sample.e2eMs", `expected a number >= 0, received ${e2e}`);
  if (sample.replicaId !== null && typeof sample.replicaId !== "string") {
    throw new TunerInputError("sample.replicaId", `expected a string or null, received ${typeof sample.replicaId}`);
  }
  if (typeof sample.ok !== "boolean") throw new TunerInputError("sample.ok", `expected a boolean, received ${typeof sample.ok}`);
  // Keep only the fields the tuner uses: callers may pass whole telemetry events.
  return {
    configVersion: sample.configVersion as number,
    ttftMs: sample.ttftMs as number | null,
    e2eMs: e2e,
    replicaId: sample.replicaId as string | null,
    ok: sample.ok,
  };
}

/**
 * (1+1)-ES over the GORGO cost weights (docs/ARCHITECTURE.md, "The tuner path"). Pure: the caller feeds samples and
 * publishes whatever `current()` says; nothing here reads a clock or does I/O.
 */
export class EsTuner {
  #s: TunerState;

  constructor(config: Partial<TunerConfig> & { seed: number }, initial?: Weights) {
    const resolved = resolveConfig(config);
    const start = validateWeights("initial", initial ?? DEFAULT_WEIGHTS);
    requireWithinBounds("initial", start, resolved.bounds);
    this.#s = EsTuner.#fresh(resolved, start);
  }

  static #fresh(config: TunerConfig, initial: Weights): TunerState {
    const measuring = config.mode === "online";
    return {
      format: TUNER_STATE_FORMAT,
      config: copy(config),
      initial: { ...initial },
      mode: config.mode,
      prng: seedPrng(config.seed),
      sigma: config.sigma0,
      converged: false,
      step: 0,
      incumbent: unmeasured(initial),
      manualWeights: config.mode === "manual" ? { ...initial } : null,
      current: { weights: { ...initial }, version: null, role: measuring ? "remeasure" : "incumbent" },
      window: [],
      samplesSinceEvaluation: 0,
      outcomes: [],
      candidatesSinceRemeasure: 0,
      trajectory: [],
    };
  }

  static restore(state: TunerState): EsTuner {
    const restored = restoredState(state);
    const tuner = new EsTuner({ seed: restored.config.seed });
    tuner.#s = restored;
    return tuner;
  }

  /** A deep copy: mutating it does not affect the tuner. */
  state(): TunerState {
    return copy(this.#s);
  }

  current(): TunerCurrent {
    return copy(this.#s.current);
  }

  /** Steps kept so far, oldest first (bounded by config.maxTrajectory). */
  trajectory(): TunerStep[] {
    return copy(this.#s.trajectory);
  }

  get mode(): TunerMode {
    return this.#s.mode;
  }

  get converged(): boolean {
    return this.#s.converged;
  }

  get sigma(): number {
    return this.#s.sigma;
  }

  /** The caller published `current().weights` under `configVersion`. In versioned mode this starts the window. */
  bind(configVersion: number): void {
    requireInteger("configVersion", configVersion, 0);
    const s = this.#s;
    if (s.current.version === configVersion) return; // re-publishing the same version changes nothing
    s.current.version = configVersion;
    if (s.config.evaluation === "versioned") s.window = [];
  }

  /** Feeds one finished request. Returns the step when a window closes; then `current()` holds the next weights. */
  observe(sample: TunerSample): TunerStep | null {
    const checked = validateSample(sample);
    const s = this.#s;
    if (s.mode !== "online" || s.converged) return null;
    if (s.config.evaluation === "versioned") {
      // Samples routed under any other version (older weights still draining, or a version not yet
      // bound) would contaminate this window.
      if (s.current.version === null || checked.configVersion !== s.current.version) return null;
      s.window.push(checked);
      if (s.window.length < s.config.window) return null;
      const step = this.#closeWindow(summarizeWindow(s.window));
      s.window = [];
      return step;
    }
    s.window.push(checked);
    if (s.window.length > s.config.window) s.window.shift();
    s.samplesSinceEvaluation++;
    // As published: wait for a full trailing window, then score it every `hop` samples.
    if (s.window.length < s.config.window || s.samplesSinceEvaluation < s.config.hop) return null;
    s.samplesSinceEvaluation = 0;
    return this.#closeWindow(summarizeWindow(s.window));
  }

  /** Switch modes. Returning to `online` re-measures the incumbent first: its stored fitness may be stale. */
  setMode(mode: TunerMode): void {
    validateMode("mode", mode);
    const s = this.#s;
    // Idempotent while tuning, so a console re-asserting "online" does not throw away a half-filled window.
    if (mode === "online" && s.mode === "online" && !s.converged) return;
    if (mode === "manual" && s.manualWeights === null) s.manualWeights = { ...s.incumbent.weights };
    if (mode === "online" && s.mode === "manual" && s.manualWeights !== null) {
      // The operator's weights are the starting point for tuning.
      s.incumbent = unmeasured(s.manualWeights);
    }
    s.mode = mode;
    if (mode === "online") {
      s.converged = false;
      if (s.sigma < s.config.sigmaMin) s.sigma = s.config.sigma0;
      s.outcomes = [];
      this.#setCurrent(s.incumbent.weights, "remeasure");
    } else {
      this.#setCurrent(mode === "manual" && s.manualWeights !== null ? s.manualWeights : s.incumbent.weights, "incumbent");
    }
  }

  /** Operator weights: must lie within the bounds. Switches to `manual` mode. */
  setManualWeights(weights: Weights): void {
    const checked = validateWeights("weights", weights);
    requireWithinBounds("weights", checked, this.#s.config.bounds);
    this.#s.manualWeights = checked;
    this.#s.mode = "manual";
    this.#setCurrent(checked, "incumbent");
  }

  /** New bounds. Weights outside them are clipped; a candidate under measurement is dropped. */
  setBounds(bounds: WeightBounds): void {
    const checked = validateBounds("bounds", bounds);
    const s = this.#s;
    s.config.bounds = checked;
    const clipped = clipToBounds(s.incumbent.weights, checked);
    const moved = WEIGHT_NAMES.some((name) => clipped[name] !== s.incumbent.weights[name]);
    s.incumbent = moved ? unmeasured(clipped) : s.incumbent;
    if (s.manualWeights !== null) s.manualWeights = clipToBounds(s.manualWeights, checked);
    if (s.mode === "online" && !s.converged) this.#setCurrent(s.incumbent.weights, "remeasure");
    else this.#setCurrent(s.mode === "manual" && s.manualWeights !== null ? s.manualWeights : s.incumbent.weights, "incumbent");
  }

  /** Back to the initial weights (clipped to the current bounds), σ0, the seed's PRNG stream and an empty trajectory. Keeps mode and bounds. */
  reset(): void {
    const s = this.#s;
    const fresh = EsTuner.#fresh({ ...s.config, mode: s.mode }, clipToBounds(s.initial, s.config.bounds));
    fresh.initial = { ...s.initial };
    this.#s = fresh;
  }

  #setCurrent(weights: Weights, role: TunerRole): void {
    const s = this.#s;
    s.current = { weights: { ...weights }, version: null, role };
    s.window = s.config.evaluation === "versioned" ? [] : s.window;
    s.samplesSinceEvaluation = 0;
  }

  #mutate(): Weights {
    const s = this.#s;
    const next = {} as Weights;
    for (const name of WEIGHT_NAMES) {
      const [lo, hi] = s.config.bounds[name];
      const z = nextNormal(s.prng);
      next[name] = Math.min(Math.max(Math.exp(Math.log(s.incumbent.weights[name]) + s.sigma * z), lo), hi);
    }
    return next;
  }

  /** The guardrails that need no reference: they judge a window on its own, so they apply to the incumbent too. */
  #absoluteGuardrail(errorRate: number, maxShare: number): IncumbentGuardrail {
    const rails = this.#s.config.guardrails;
    if (!rails.enabled) return "pass";
    if (errorRate > rails.maxErrorRate) return "errors";
    if (maxShare > rails.maxShare) return "share";
    return "pass";
  }

  #guardrail(summary: WindowSummary, measurable: boolean): GuardrailVerdict {
    const s = this.#s;
    // A window in which no request produced a first token cannot be compared, guardrails or not.
    if (!measurable) return "errors";
    const absolute = this.#absoluteGuardrail(summary.errorRate, summary.maxShare);
    if (absolute !== "pass") return absolute;
    // E2E is judged relative to the incumbent, which only makes sense if the incumbent is itself healthy:
    // a hacked incumbent's E2E (fast, because everything hits the nearest replica) would block the way out.
    const incumbentE2e = s.incumbent.e2eP95Ms;
    if (
      s.config.guardrails.enabled &&
      s.incumbent.guardrail === "pass" &&
      incumbentE2e !== null &&
      summary.e2eP95Ms > (1 + s.config.guardrails.e2eTolerance) * incumbentE2e
    ) {
      return "e2e";
    }
    return "pass";
  }

  /**
   * Whether a measurable candidate window beats the incumbent (the acceptance rule; see
   * TunerStep.incumbentGuardrail). With a healthy incumbent, as published: pass the guardrails and have
   * lower p95 TTFT. With an incumbent that violates an absolute guardrail, TTFT is not the question —
   * its TTFT is typically good *because* of the violation — so the candidate needs only to violate less.
   */
  #beatsIncumbent(summary: WindowSummary, verdict: GuardrailVerdict, fitness: number): boolean {
    const s = this.#s;
    const incumbent = s.incumbent;
    if (incumbent.guardrail === "pass" || incumbent.errorRate === null || incumbent.maxShare === null) {
      return verdict === "pass" && (incumbent.p95TtftMs === null || fitness < incumbent.p95TtftMs);
    }
    if (verdict === "pass") return true;
    // Errors first: failed requests are worse than uneven load. Only the excess over each cap counts, so an
    // error rate within its cap never outweighs a share violation.
    const rails = s.config.guardrails;
    const errorExcess = (rate: number) => Math.max(0, rate - rails.maxErrorRate);
    const shareExcess = (share: number) => Math.max(0, share - rails.maxShare);
    const candidateErrors = errorExcess(summary.errorRate);
    const incumbentErrors = errorExcess(incumbent.errorRate);
    if (candidateErrors !== incumbentErrors) return candidateErrors < incumbentErrors;
    return shareExcess(summary.maxShare) < shareExcess(incumbent.maxShare);
  }

  #measuredIncumbent(weights: Weights, fitness: number, summary: WindowSummary): IncumbentRecord {
    return {
      weights: { ...weights },
      p95TtftMs: fitness,
      e2eP95Ms: summary.e2eP95Ms,
      maxShare: summary.maxShare,
      errorRate: summary.errorRate,
      guardrail: this.#absoluteGuardrail(summary.errorRate, summary.maxShare),
    };
  }

  #closeWindow(summary: WindowSummary): TunerStep {
    const s = this.#s;
    s.step++;
    const measured = s.current;
    const sigmaBefore = s.sigma;
    // With no TTFT at all, stand in E2E p95 so the step still carries a number; such a window never wins.
    const fitness = summary.p95TtftMs ?? summary.e2eP95Ms;
    let accepted: boolean;
    let guardrail: GuardrailVerdict = "pass";
    let kind: TunerStep["kind"];

    if (measured.role === "candidate") {
      kind = "candidate";
      const measurable = summary.p95TtftMs !== null;
      guardrail = this.#guardrail(summary, measurable);
      accepted = measurable && this.#beatsIncumbent(summary, guardrail, fitness);
      if (accepted) s.incumbent = this.#measuredIncumbent(measured.weights, fitness, summary);
      this.#adaptSigma(accepted);
      s.candidatesSinceRemeasure++;
    } else {
      kind = "remeasure";
      accepted = true;
      // The fresh window also re-judges the incumbent against the absolute guardrails, so a hacked start
      // (or an incumbent whose load pattern drifted into violation) is found out here.
      s.incumbent = this.#measuredIncumbent(s.incumbent.weights, fitness, summary);
      s.candidatesSinceRemeasure = 0;
    }

    // A violating incumbent is not an optimum to settle on: failed candidates around it would shrink σ
    // under the 1/5 rule until the tuner "converged" on the hack. So while it violates, failures do not
    // shrink σ (successes still widen it) and σ stays at σ0/2 or above, wide enough to keep exploring;
    // convergence is refused below as well. Not a hard reset to σ0: a tuner that settles right at the
    // share cap sees its incumbent flip in and out of violation on sampling noise alone, and resetting σ
    // on every flip kept it from ever converging (measured on the synthetic hacked fleet in the tests).
    if (s.incumbent.guardrail !== "pass") s.sigma = Math.min(Math.max(s.sigma, sigmaBefore, s.config.sigma0 / 2), s.config.sigmaMax);
    // Deep in the hack every nearby candidate violates just as badly (100 % on one replica is a plateau),
    // so holding σ is not enough to leave it: on real traces the tuner sat at the floor for the whole
    // window. A rejected candidate that also violates widens σ, as on any plateau, until a step is long
    // enough to reach weights that spread the load.
    if (kind === "candidate" && !accepted && s.incumbent.guardrail !== "pass" && guardrail !== "pass" && guardrail !== "e2e") {
      s.sigma = Math.min(s.sigma / s.config.sigmaFactor, s.config.sigmaMax);
    }

    if (s.sigma < s.config.sigmaMin && s.incumbent.guardrail === "pass") {
      s.converged = true;
      this.#setCurrent(s.incumbent.weights, "incumbent"); // pin the best weights
    } else if (s.candidatesSinceRemeasure >= s.config.remeasureEvery) {
      this.#setCurrent(s.incumbent.weights, "remeasure");
    } else {
      this.#setCurrent(this.#mutate(), "candidate");
    }

    const step: TunerStep = {
      step: s.step,
      kind,
      weights: { ...measured.weights },
      fitnessP95TtftMs: fitness,
      e2eP95Ms: summary.e2eP95Ms,
      maxShare: summary.maxShare,
      errorRate: summary.errorRate,
      samples: summary.samples,
      accepted,
      guardrail,
      sigma: s.sigma,
      incumbent: { ...s.incumbent.weights },
      incumbentP95TtftMs: s.incumbent.p95TtftMs ?? fitness,
      incumbentGuardrail: s.incumbent.guardrail,
      converged: s.converged,
      configVersion: measured.version,
    };
    s.trajectory.push(step);
    if (s.trajectory.length > s.config.maxTrajectory) s.trajectory.splice(0, s.trajectory.length - s.config.maxTrajectory);
    return copy(step);
  }

  /** Rechenberg's 1/5 rule over the last `successHistory` candidate outcomes. */
  #adaptSigma(success: boolean): void {
    const s = this.#s;
    s.outcomes.push(success);
    if (s.outcomes.length > s.config.successHistory) s.outcomes.shift();
    const rate = s.outcomes.filter(Boolean).length / s.outcomes.length;
    if (rate > s.config.targetSuccessRate) s.sigma = Math.min(s.sigma / s.config.sigmaFactor, s.config.sigmaMax);
    else if (rate < s.config.targetSuccessRate) s.sigma *= s.config.sigmaFactor;
  }
}
