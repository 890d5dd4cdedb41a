// The simulator's tuner path, as the console runs it live: each LB's telemetry events feed that LB's
// (1+1)-ES (@meridian/tuner), and when the tuner steps, its next weights are pushed to the LB as a
// new config version. In virtual time the push is instantaneous (live, the console pushes over HTTP
// in a few ms). This file also keeps the trajectory the CLI and the console print.
import type { TelemetryEventBody } from "@meridian/lb-core";
import type { LbConfig } from "@meridian/protocol";
import type { Weights } from "@meridian/routing";
import { EsTuner, type EvaluationMode, type TunerStep, type WeightBounds } from "@meridian/tuner";

export interface TunerRunOptions {
  evaluation: EvaluationMode;
  guardrails: boolean;
  bounds?: WeightBounds;
  /** Samples per evaluation window (default 128). */
  window?: number;
  /** Paper mode: evaluate every `hop` samples (default 32). */
  hop?: number;
}

export interface TunerTrajectoryPoint {
  step: number;
  /** Virtual time the window closed, ms. */
  atMs: number;
  /** Samples the tuner had been fed when this window closed. */
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
}

export interface TunerReport {
  lb: string;
  evaluation: EvaluationMode;
  guardrails: boolean;
  initialWeights: Weights;
  finalWeights: Weights;
  steps: number;
  /** Samples fed when the final incumbent was first accepted (0 if the initial weights were never beaten). */
  samplesToBest: number;
  samplesSeen: number;
  converged: boolean;
  trajectory: TunerTrajectoryPoint[];
}

export class TunerDriver {
  private readonly tuner: EsTuner;
  private samples = 0;
  private samplesToBest = 0;
  private readonly trajectory: TunerTrajectoryPoint[] = [];

  constructor(
    private readonly lbId: string,
    options: TunerRunOptions,
    seed: number,
    initialWeights: Weights,
  ) {
    this.tuner = new EsTuner(
      {
        seed,
        evaluation: options.evaluation,
        guardrails: { enabled: options.guardrails, e2eTolerance: 0.25, maxShare: 0.8, maxErrorRate: 0.05 },
        ...(options.bounds ? { bounds: options.bounds } : {}),
        ...(options.window !== undefined ? { window: options.window } : {}),
        ...(options.hop !== undefined ? { hop: options.hop } : {}),
      },
      initialWeights,
    );
  }

  /** The weights the LB should start with. */
  weights(): Weights {
    return this.tuner.current().weights;
  }

  /** Binds the tuner to the config version carrying its current weights. */
  bind(version: number): void {
    this.tuner.bind(version);
  }

  /** Feeds one telemetry event; returns the config to push when the tuner stepped, else null. */
  observe(event: TelemetryEventBody, config: LbConfig, now: number): LbConfig | null {
    this.samples++;
    // The console's rule (rolling-stats isError): an error status or message is a failed sample.
    const step = this.tuner.observe({
      configVersion: event.configVersion,
      ttftMs: event.ttftMs,
      e2eMs: event.e2eMs,
      replicaId: event.replicaId,
      ok: event.status < 400 && event.error === null,
    });
    if (step === null) return null;
    const before = this.trajectory.length > 0 ? this.trajectory[this.trajectory.length - 1]!.incumbent : config.weights;
    if (step.kind === "candidate" && step.accepted && !sameWeights(before, step.incumbent)) this.samplesToBest = this.samples;
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
    });
    // Publish the tuner's next weights under a new config version.
    const next: LbConfig = { ...config, version: config.version + 1, weights: this.tuner.current().weights };
    this.tuner.bind(next.version);
    return next;
  }

  report(): TunerReport {
    const state = this.tuner.state();
    return {
      lb: this.lbId,
      evaluation: state.config.evaluation,
      guardrails: state.config.guardrails.enabled,
      initialWeights: state.initial,
      finalWeights: state.incumbent.weights,
      steps: state.step,
      samplesToBest: this.samplesToBest,
      samplesSeen: this.samples,
      converged: state.converged,
      trajectory: this.trajectory,
    };
  }
}

function sameWeights(a: Weights, b: Weights): boolean {
  return a.rtt === b.rtt && a.queue === b.queue;
}
