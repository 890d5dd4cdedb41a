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
  DEFAULT_INITIAL_WEIGHTS,
  WEIGHT_NAMES,
  type TunerConfig,
  type TunerMode,
  type WeightBounds,
  type Weights,
} from "./config";
import { nextNormal, seedPrng, type PrngState } from "./prng";
import { summarizeWindow, type TunerSample, type WindowSummary } from "./window";

/** What the weights currently being routed with are for. */
export type TunerRole =
  /** Not under measurement: static or manual mode, or converged. */
  | "incumbent"
  /** A mutated candidate being scored. */
  | "candidate"
  /** The incumbent being (re-)measured: at start, after a mode or bounds change, and every K candidate steps. */
  | "remeasure";

export type GuardrailVerdict = "pass" | "e2e" | "share" | "errors";

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
  /** Why a candidate was rejected outright; always "pass" for remeasure steps and when guardrails are off. */
  guardrail: GuardrailVerdict;
  /** σ after this step's adaptation. */
  sigma: number;
  /** Incumbent after this step. */
  incumbent: Weights;
  incumbentP95TtftMs: number;
  converged: boolean;
  /** Config version the window was scored on (versioned), or the version bound when it closed (paper). */
  configVersion: number | null;
}

export interface TunerCurrent {
  weights: Weights;
  version: number | null;
  role: TunerRole;
}

interface IncumbentRecord {
  weights: Weights;
  /** null until first measured. */
  p95TtftMs: number | null;
  e2eP95Ms: number | null;
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

function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

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
 * (1+1)-ES over the GORGO cost weights (DESIGN.md, Tuner). Pure: the caller feeds samples and
 * publishes whatever `current()` says; nothing here reads a clock or does I/O.
 */
export class EsTuner {
  #s: TunerState;

  constructor(config: Partial<TunerConfig> & { seed: number }, initial?: Weights) {
    const resolved = resolveConfig(config);
    const start = validateWeights("initial", initial ?? DEFAULT_INITIAL_WEIGHTS);
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
      incumbent: { weights: { ...initial }, p95TtftMs: null, e2eP95Ms: null },
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
    const tuner = new EsTuner({ seed: config.seed });
    tuner.#s = copy({ ...state, config });
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
      s.incumbent = { weights: { ...s.manualWeights }, p95TtftMs: null, e2eP95Ms: null };
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
    s.incumbent = moved ? { weights: clipped, p95TtftMs: null, e2eP95Ms: null } : s.incumbent;
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

  #guardrail(summary: WindowSummary, measurable: boolean): GuardrailVerdict {
    const s = this.#s;
    // A window in which no request produced a first token cannot be compared, guardrails or not.
    if (!measurable) return "errors";
    const rails = s.config.guardrails;
    if (!rails.enabled) return "pass";
    if (summary.errorRate > rails.maxErrorRate) return "errors";
    if (summary.maxShare > rails.maxShare) return "share";
    const incumbentE2e = s.incumbent.e2eP95Ms;
    if (incumbentE2e !== null && summary.e2eP95Ms > (1 + rails.e2eTolerance) * incumbentE2e) return "e2e";
    return "pass";
  }

  #closeWindow(summary: WindowSummary): TunerStep {
    const s = this.#s;
    s.step++;
    const measured = s.current;
    // With no TTFT at all, stand in E2E p95 so the step still carries a number; such a window never wins.
    const fitness = summary.p95TtftMs ?? summary.e2eP95Ms;
    let accepted: boolean;
    let guardrail: GuardrailVerdict = "pass";
    let kind: TunerStep["kind"];

    if (measured.role === "candidate") {
      kind = "candidate";
      guardrail = this.#guardrail(summary, summary.p95TtftMs !== null);
      const incumbentFitness = s.incumbent.p95TtftMs;
      accepted = guardrail === "pass" && (incumbentFitness === null || fitness < incumbentFitness);
      if (accepted) s.incumbent = { weights: { ...measured.weights }, p95TtftMs: fitness, e2eP95Ms: summary.e2eP95Ms };
      this.#adaptSigma(accepted);
      s.candidatesSinceRemeasure++;
    } else {
      kind = "remeasure";
      accepted = true;
      s.incumbent = { weights: { ...s.incumbent.weights }, p95TtftMs: fitness, e2eP95Ms: summary.e2eP95Ms };
      s.candidatesSinceRemeasure = 0;
    }

    if (s.sigma < s.config.sigmaMin) {
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

function requirePositiveSigma(value: unknown): void {
  const sigma = requireFiniteNumber("state.sigma", value);
  if (sigma <= 0) throw new TunerInputError("state.sigma", `expected a number > 0, received ${sigma}`);
}
