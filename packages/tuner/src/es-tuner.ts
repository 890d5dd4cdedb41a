import {
  clipToBounds,
  requireInteger,
  requireWithinBounds,
  resolveConfig,
  sigmaForBounds,
  TunerInputError,
  validateBounds,
  validateMode,
  validateWeights,
  WEIGHT_NAMES,
  type TunerConfig,
  type TunerConfigInput,
  type TunerMode,
  type WeightBounds,
  type Weights,
} from "./config";
import { DEFAULT_WEIGHTS } from "@meridian/routing/types";
import { observePaper } from "./paper-window";
import { observePeerTrial, observeTrial, startTrial } from "./ab-trial";
import type { IncumbentGuardrail } from "./guardrails";
import { seedPrng } from "./prng";
import { validateSample } from "./samples";
import { migrateState, validateRestoredState, withDecidableCap } from "./restore";
import { copy, TUNER_STATE_FORMAT, unmeasured, type TrialState, type TunerCurrent, type TunerRole, type TunerState, type TunerStep } from "./state";
import type { Arm } from "./trial/arm";
import type { TunerSample } from "./window";

/** The running A/B trial as the console shows it: the assignment, its samples so far and the latest look's evidence. */
export type LiveTrial = Pick<TrialState, "id" | "salt" | "share" | "candidate" | "looks" | "latest" | "latestAlpha"> & {
  /** Samples per arm so far, and of those the ones the other arm's weights would have routed elsewhere. */
  samples: Record<Arm, number>;
  triggered: Record<Arm, number>;
  /** The trial's sample cap. */
  maxSamples: number;
};

/**
 * (1+1)-ES over the GORGO cost weights (packages/tuner/README.md; docs/ARCHITECTURE.md, "The tuner path"). Pure: the caller feeds samples
 * and publishes whatever `current()` says; nothing here reads a clock or does I/O.
 */
export class EsTuner {
  #s: TunerState;

  constructor(config: TunerConfigInput, initial?: Weights) {
    const resolved = resolveConfig(config);
    const start = validateWeights("initial", initial ?? DEFAULT_WEIGHTS);
    requireWithinBounds("initial", start, resolved.bounds);
    this.#s = EsTuner.#fresh(resolved, start);
  }

  static #fresh(config: TunerConfig, initial: Weights): TunerState {
    const measuring = config.mode === "online";
    const s: TunerState = {
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
      current: { weights: { ...initial }, version: null, role: measuring ? "remeasure" : "incumbent", trial: null },
      window: [],
      samplesSinceEvaluation: 0,
      trial: null,
      trialsStarted: 0,
      planned: null,
      outcomes: [],
      candidatesSinceRemeasure: 0,
      trajectory: [],
      paused: null,
    };
    if (measuring && config.evaluation === "ab") startTrial(s);
    return s;
  }

  /** Continues from `state()` output, including states persisted in the pre-trial format (migrated). */
  static restore(state: TunerState): EsTuner {
    if (typeof state !== "object" || state === null) throw new TunerInputError("state", "expected an object");
    const migrated = migrateState(state as unknown as Record<string, unknown>);
    const config = resolveConfig(withDecidableCap(migrated.state.config));
    const restored = validateRestoredState(copy({ ...migrated.state, config }), migrated.startTrial);
    const tuner = new EsTuner({ seed: config.seed });
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

  /** The running A/B trial, or null (paper mode, not tuning). */
  trial(): LiveTrial | null {
    const t = this.#s.trial;
    if (t === null) return null;
    const samples = { incumbent: 0, candidate: 0 };
    const triggered = { incumbent: 0, candidate: 0 };
    for (const sample of t.samples) {
      samples[sample.arm]++;
      if (sample.triggered !== false) triggered[sample.arm]++;
    }
    const { id, salt, share, candidate, looks, latest, latestAlpha } = t;
    return copy({ id, salt, share, candidate, looks, latest, latestAlpha, samples, triggered, maxSamples: this.#s.config.trial.maxSamples });
  }

  /** Steps kept so far, oldest first (bounded by config.maxTrajectory). */
  trajectory(): TunerStep[] {
    return copy(this.#s.trajectory);
  }

  get mode(): TunerMode {
    return this.#s.mode;
  }

  /** paper: σ fell below σ_min and the weights are pinned. ab: σ is at its floor (trials go on). */
  get converged(): boolean {
    return this.#s.converged;
  }

  get sigma(): number {
    return this.#s.sigma;
  }

  /** Why tuning is paused, or null when it is not. */
  get pausedReason(): string | null {
    return this.#s.paused;
  }

  get incumbentGuardrail(): IncumbentGuardrail {
    return this.#s.incumbent.guardrail;
  }

  /** The caller published `current()` under `configVersion`. */
  bind(configVersion: number): void {
    requireInteger("configVersion", configVersion, 0);
    this.#s.current.version = configVersion;
  }

  /** Feeds one finished request of this LB. Returns the step when a window closes or a trial is decided; then `current()` holds what to publish next. */
  observe(sample: TunerSample): TunerStep | null {
    const checked = validateSample(sample);
    const s = this.#s;
    // Paused: the LB routes everyone with the incumbent, so a sample says nothing about a candidate.
    if (s.mode !== "online" || s.paused !== null) return null;
    let step: TunerStep | null;
    if (s.config.evaluation === "ab") {
      step = observeTrial(s, checked);
    } else {
      if (s.converged) return null;
      step = observePaper(s, checked, (weights, role) => this.#setCurrent(weights, role));
    }
    if (step !== null) this.#record(step);
    return step === null ? null : copy(step);
  }

  /** A request another LB of the fleet routed: counts toward the fleet-share guardrail of the running trial. */
  observePeer(sample: { replicaId: string | null }): void {
    if (sample === null || typeof sample !== "object") throw new TunerInputError("sample", "expected an object");
    if (sample.replicaId !== null && typeof sample.replicaId !== "string") {
      throw new TunerInputError("sample.replicaId", `expected a string or null, received ${typeof sample.replicaId}`);
    }
    if (this.#s.mode === "online" && this.#s.paused === null) observePeerTrial(this.#s, sample.replicaId);
  }

  #record(step: TunerStep): void {
    const s = this.#s;
    s.trajectory.push(copy(step));
    if (s.trajectory.length > s.config.maxTrajectory) s.trajectory.splice(0, s.trajectory.length - s.config.maxTrajectory);
  }

  /**
   * Pauses tuning, e.g. while the LB's policy ignores the weights: a trial there would measure noise,
   * and accepting it would walk the incumbent anywhere. The running trial (or paper candidate) is
   * dropped, the incumbent goes live, samples are ignored. Idempotent; a new reason replaces the old.
   */
  pause(reason: string): void {
    if (typeof reason !== "string" || reason.trim() === "") throw new TunerInputError("reason", "expected a non-empty string");
    const s = this.#s;
    const wasPaused = s.paused !== null;
    s.paused = reason;
    if (wasPaused) return;
    this.#setCurrent(s.mode === "manual" && s.manualWeights !== null ? s.manualWeights : s.incumbent.weights, "incumbent");
  }

  /** Ends a pause: tuning (when online) continues from the incumbent with a new trial. A no-op when not paused. */
  resume(): void {
    const s = this.#s;
    if (s.paused === null) return;
    s.paused = null;
    if (s.mode === "online" && (s.config.evaluation === "ab" || !s.converged)) this.#startMeasuring();
  }

  /** Switch modes. Returning to `online` re-measures the incumbent (paper) or starts a trial (ab). */
  setMode(mode: TunerMode): void {
    validateMode("mode", mode);
    const s = this.#s;
    // Idempotent while tuning, so a console re-asserting "online" does not throw away a half-filled window or trial.
    if (mode === "online" && s.mode === "online" && (s.config.evaluation === "ab" || !s.converged)) return;
    if (mode === "manual" && s.manualWeights === null) s.manualWeights = { ...s.incumbent.weights };
    if (mode === "online" && s.mode === "manual" && s.manualWeights !== null) {
      // The operator's weights are the starting point for tuning.
      s.incumbent = unmeasured(s.manualWeights);
    }
    s.mode = mode;
    if (mode === "online") {
      s.converged = false;
      if (s.sigma <= s.config.sigmaMin) s.sigma = s.config.sigma0;
      s.outcomes = [];
      this.#startMeasuring();
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

  /** New bounds. Weights outside them are clipped; a candidate or trial under measurement is dropped. */
  setBounds(bounds: WeightBounds): void {
    const checked = validateBounds("bounds", bounds);
    const s = this.#s;
    // σ0 and σmax that came from the old box follow the new one (set by hand, they stay): narrowed
    // to a hundredth of its width, a σ of 1.9 sent nearly every candidate to a corner.
    const fromOldBox = sigmaForBounds(s.config.bounds);
    if (s.config.sigma0 === fromOldBox.sigma0 && s.config.sigmaMax === fromOldBox.sigmaMax) {
      Object.assign(s.config, sigmaForBounds(checked));
      s.sigma = Math.min(s.sigma, s.config.sigmaMax);
    }
    s.config.bounds = checked;
    const clipped = clipToBounds(s.incumbent.weights, checked);
    const moved = WEIGHT_NAMES.some((name) => clipped[name] !== s.incumbent.weights[name]);
    s.incumbent = moved ? unmeasured(clipped) : s.incumbent;
    if (s.manualWeights !== null) s.manualWeights = clipToBounds(s.manualWeights, checked);
    if (s.mode === "online" && (s.config.evaluation === "ab" || !s.converged)) this.#startMeasuring();
    else this.#setCurrent(s.mode === "manual" && s.manualWeights !== null ? s.manualWeights : s.incumbent.weights, "incumbent");
  }

  /** Back to the initial weights (clipped to the current bounds), σ0, the seed's PRNG stream and an empty trajectory. Keeps mode and bounds. */
  reset(): void {
    const s = this.#s;
    const fresh = EsTuner.#fresh({ ...s.config, mode: s.mode }, clipToBounds(s.initial, s.config.bounds));
    fresh.initial = { ...s.initial };
    const paused = s.paused;
    this.#s = fresh;
    if (paused !== null) this.pause(paused);
  }

  #startMeasuring(): void {
    if (this.#s.paused !== null) this.#setCurrent(this.#s.incumbent.weights, "incumbent");
    else if (this.#s.config.evaluation === "ab") startTrial(this.#s);
    else this.#setCurrent(this.#s.incumbent.weights, "remeasure");
  }

  #setCurrent(weights: Weights, role: TunerRole): void {
    const s = this.#s;
    s.current = { weights: { ...weights }, version: null, role, trial: null };
    s.trial = null;
    s.samplesSinceEvaluation = 0;
  }
}
