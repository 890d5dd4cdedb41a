// The simulator's tuner path, as the console runs it live: LB telemetry → @meridian/tuner (the same
// sample rule, sampleFromEvent) → a config push carrying the tuner's weights and, in A/B mode, its
// trial, which the LB core applies to new requests. In virtual time the push is instantaneous (live,
// the console pushes over HTTP, rate-limited). This file also keeps the trajectory the CLI prints.
//
// Scope: "lb" gives each LB its own tuner, as the console does; "fleet" gives all LBs one tuner,
// whose trial every LB applies, so a trial gathers the whole fleet's samples (packages/tuner/README.md
// compares the two).
import type { TelemetryEventBody } from "@meridian/lb-core";
import type { LbConfig } from "@meridian/protocol";
import type { Weights } from "@meridian/routing";
import {
  EsTuner,
  eventRole,
  type ForwardEntryView,
  sameWeights,
  sampleFromEvent,
  type EvaluationMode,
  type TrialConfig,
  type TrialReport,
  type TunerStep,
  type WeightBounds,
} from "@meridian/tuner";

export type TunerScope = "lb" | "fleet";

export interface TunerRunOptions {
  evaluation: EvaluationMode;
  guardrails: boolean;
  bounds?: WeightBounds;
  /** Paper mode: samples per evaluation window (default 128). */
  window?: number;
  /** Paper mode: evaluate every `hop` samples (default 32). */
  hop?: number;
  /** Default "lb": one tuner per LB. */
  scope?: TunerScope;
  /** Trial settings over the tuner's defaults (ab mode). */
  trial?: Partial<TrialConfig>;
  /**
   * Experiments: stop tuning (freeze the incumbent) once this many valid samples were fed, counting
   * only requests that arrived at or after `afterMs` (default: all).
   */
  stopAfter?: { samples: number; afterMs?: number };
  /** Experiments: the first trial's candidate is the incumbent itself (an A/A trial); tuning stops after it. */
  aaTrial?: boolean;
}

export interface TunerTrajectoryPoint {
  step: number;
  /** Virtual time the window closed or the trial was decided, ms. */
  atMs: number;
  /** Samples the tuner had been fed then. */
  samplesSeen: number;
  kind: TunerStep["kind"];
  weights: Weights;
  p95TtftMs: number;
  e2eP95Ms: number;
  maxShare: number;
  accepted: boolean;
  guardrail: TunerStep["guardrail"];
  sigma: number;
  incumbent: Weights;
  converged: boolean;
  /** ab: the trial's evidence and decision. */
  trial?: TrialReport;
}

export interface TunerReport {
  /** The LB this tuner tunes, or "fleet". */
  lb: string;
  lbs: string[];
  evaluation: EvaluationMode;
  guardrails: boolean;
  initialWeights: Weights;
  finalWeights: Weights;
  steps: number;
  /** Samples fed when the final incumbent was first accepted (0 if the initial weights were never beaten). */
  samplesToBest: number;
  samplesSeen: number;
  /** With `stopAfter`: the sample at which the budget froze the tuner; absent when the workload ended
   * first (a trace too short for the budget: the tuner tuned on all it saw). */
  frozenAtSamples?: number;
  converged: boolean;
  trajectory: TunerTrajectoryPoint[];
}

export class TunerDriver {
  private readonly tuner: EsTuner;
  private samples = 0;
  private samplesAfter = 0;
  private samplesToBest = 0;
  private stopped = false;
  /** The sample at which the samples budget (stopAfter) froze the tuner, or null. */
  private frozenAtSamples: number | null = null;
  private readonly trajectory: TunerTrajectoryPoint[] = [];

  constructor(
    /** "fleet" or the LB's id. */
    private readonly name: string,
    /** The LBs whose weights (and trial) this tuner sets. */
    readonly lbIds: readonly string[],
    private readonly options: TunerRunOptions,
    seed: number,
    initialWeights: Weights,
  ) {
    let tuner = new EsTuner(
      {
        seed,
        evaluation: options.evaluation,
        guardrails: { enabled: options.guardrails, e2eTolerance: 0.25, maxShare: 0.8, maxErrorRate: 0.05 },
        ...(options.bounds ? { bounds: options.bounds } : {}),
        ...(options.window !== undefined ? { window: options.window } : {}),
        ...(options.hop !== undefined ? { hop: options.hop } : {}),
        ...(options.trial ? { trial: options.trial } : {}),
      },
      initialWeights,
    );
    if (options.aaTrial) {
      // An A/A trial through the public state: the same trial, with the incumbent as its candidate.
      const state = tuner.state();
      if (state.trial === null || state.current.trial === null) throw new Error("an A/A trial needs evaluation ab");
      state.trial.candidate = { ...state.incumbent.weights };
      state.current.trial.candidate = { ...state.incumbent.weights };
      tuner = EsTuner.restore(state);
    }
    this.tuner = tuner;
  }

  /** The config an LB of this tuner should run: its weights and, while a trial runs, the trial. */
  configFor(base: LbConfig): LbConfig {
    const { weights, trial } = this.tuner.current();
    const next: LbConfig = { ...base, weights: { ...weights } };
    if (trial !== null) next.trial = { id: trial.id, salt: trial.salt, share: trial.share, candidate: { ...trial.candidate } };
    else delete next.trial;
    return next;
  }

  /** Binds the tuner to the config version carrying its current weights. */
  bind(version: number): void {
    this.tuner.bind(version);
  }

  /** One LB's finished request. Returns true when the tuner's current weights or trial changed (push them). */
  observe(event: TelemetryEventBody, now: number): boolean {
    if (this.stopped) return false;
    // The live console's rule (tuner's eventRole): a fleet tuner samples a forwarded request once, at its entry LB.
    const holdsEntry = (entry: ForwardEntryView): boolean => this.lbIds.includes(entry.lbId);
    if (eventRole(event, { member: this.lbIds.includes(event.lbId), spansLbs: this.lbIds.length > 1, holdsEntry }) === "peer") {
      this.tuner.observePeer({ replicaId: event.replicaId });
      return false;
    }
    const sample = sampleFromEvent(event);
    if (sample === null) return false;
    this.samples++;
    const stop = this.options.stopAfter;
    if (stop !== undefined && event.time >= (stop.afterMs ?? -Infinity) && ++this.samplesAfter > stop.samples) {
      this.frozenAtSamples = this.samples;
      return this.stop();
    }
    const step = this.tuner.observe(sample);
    if (step === null) return false;
    this.record(step, now);
    if (this.options.aaTrial) return this.stop();
    return true;
  }

  private stop(): boolean {
    this.stopped = true;
    this.tuner.setMode("static");
    return true;
  }

  private record(step: TunerStep, now: number): void {
    const before = this.trajectory.length > 0 ? this.trajectory[this.trajectory.length - 1]!.incumbent : this.tuner.state().initial;
    if ((step.kind === "candidate" || step.kind === "trial") && step.accepted && !sameWeights(before, step.incumbent)) this.samplesToBest = this.samples;
    this.trajectory.push({
      step: step.step,
      atMs: now,
      samplesSeen: this.samples,
      kind: step.kind,
      weights: step.weights,
      p95TtftMs: step.fitnessP95TtftMs,
      e2eP95Ms: step.e2eP95Ms,
      maxShare: step.maxShare,
      accepted: step.accepted,
      guardrail: step.guardrail,
      sigma: step.sigma,
      incumbent: step.incumbent,
      converged: step.converged,
      ...(step.trial ? { trial: step.trial } : {}),
    });
  }

  report(): TunerReport {
    const state = this.tuner.state();
    return {
      lb: this.name,
      lbs: [...this.lbIds],
      evaluation: state.config.evaluation,
      guardrails: state.config.guardrails.enabled,
      initialWeights: state.initial,
      finalWeights: state.incumbent.weights,
      steps: state.step,
      samplesToBest: this.samplesToBest,
      samplesSeen: this.samples,
      ...(this.frozenAtSamples !== null ? { frozenAtSamples: this.frozenAtSamples } : {}),
      converged: state.converged,
      trajectory: this.trajectory,
    };
  }
}
