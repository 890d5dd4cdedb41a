// The tuner's state, as plain JSON (the console persists it), and the records it is made of.

import type { TunerConfig, TunerMode, Weights } from "./config";
import type { GuardrailVerdict, IncumbentGuardrail } from "./guardrails";
import type { PrngState } from "./prng";
import type { Arm } from "./trial/arm";
import type { TrialAnalysis, TrialSample } from "./trial/analysis";
import type { QuantileInterval } from "./stats/quantile";
import type { TunerSample } from "./window";

export const TUNER_STATE_FORMAT = "meridian.tuner-state/2";
/** The format before A/B trials; EsTuner.restore migrates it. */
export const TUNER_STATE_FORMAT_V1 = "meridian.tuner-state/1";

/** What the weights currently being routed with are for. */
export type TunerRole =
  /** Not under measurement: static or manual mode, or converged (paper mode). */
  | "incumbent"
  /** paper: a mutated candidate being scored on its own window. */
  | "candidate"
  /** paper: the incumbent being (re-)measured: at start, after a mode or bounds change, and every K candidate steps. */
  | "remeasure"
  /** ab: the incumbent routes most sessions while `trial.candidate` routes a share of them. */
  | "trial";

/** The live A/B trial as an LB must apply it: route sessions with armOf(sessionKey, salt, share) === "candidate" with `candidate`. */
export interface TrialAssignment {
  id: string;
  salt: string;
  share: number;
  candidate: Weights;
}

export interface TunerCurrent {
  /** The incumbent's weights in ab mode (the majority arm); the measured weights in paper mode. */
  weights: Weights;
  version: number | null;
  role: TunerRole;
  /** ab mode while tuning: the trial every LB request must be split by. */
  trial: TrialAssignment | null;
}

/** How an A/B trial ended, for the console and the bench. */
export type TrialDecision =
  /** p95 lower with the stated confidence, guardrails passed. */
  | "accept"
  /** The incumbent violated an absolute guardrail and the candidate passed them or violated less. */
  | "accept-climb-out"
  /** The candidate routes (almost) every request as the incumbent does and lies closer to the initial weights: the less extreme of two equals. */
  | "accept-equivalent"
  /** The candidate arm broke a guardrail. */
  | "reject-guardrail"
  /** Evidence that the candidate is slower. */
  | "reject-worse"
  /** No sign of improvement by half the sample cap. */
  | "reject-futile"
  /** The cap came without evidence either way. */
  | "reject-cap";

/** The evidence a trial step was decided on. */
export interface TrialReport {
  id: string;
  share: number;
  /** The challenger was the tuner's initial weights (a check for harm), not a search step. */
  baseline?: boolean;
  decision: TrialDecision;
  /** One sentence an operator can read: the numbers behind the decision. */
  reason: string;
  samples: Record<Arm, number>;
  triggered: Record<Arm, number>;
  p95TtftMs: Record<Arm, number | null>;
  p95Interval: Record<Arm, QuantileInterval>;
  meanLogTtft: Record<Arm, number | null>;
  e2eP95Ms: Record<Arm, number>;
  /** Projected fleet share of the busiest replica under each arm's routing (guardrails.ts). */
  maxShare: Record<Arm, number>;
  errorRate: Record<Arm, number>;
  thresholdMs: number | null;
  /** One-sided p-value that the candidate's p95 is lower (randomization test on exceedances of the pooled p95). */
  pBetter: number;
  pWorse: number;
  /** The level this look could accept at (alpha spending). */
  alphaAtLook: number;
  /** Randomization p-value that the candidate's mean log TTFT is lower (reported, not decided on). */
  logPBetter: number;
  looks: number;
  cupedVarianceReduction: number | null;
}

export interface TunerStep {
  /** 1-based count of closed windows (paper) or decided trials (ab). */
  step: number;
  kind: "candidate" | "remeasure" | "trial";
  /** Weights the window was routed with (paper), or the trial's candidate (ab). */
  weights: Weights;
  /** p95 TTFT of those weights (lower is better); E2E stands in when no request had a first token. */
  fitnessP95TtftMs: number;
  e2eP95Ms: number;
  maxShare: number;
  errorRate: number;
  samples: number;
  /** candidate/trial: it became the incumbent. remeasure: always true (the fresh measurement replaced the stored one). */
  accepted: boolean;
  /**
   * The candidate's own guardrail verdict; always "pass" for remeasure steps and when guardrails are off.
   * While the incumbent itself violates an absolute guardrail, a candidate that also violates is
   * accepted when it violates less, so `accepted` may be true with "share" or "errors".
   */
  guardrail: GuardrailVerdict;
  /** σ after this step's adaptation. */
  sigma: number;
  /** Incumbent after this step. */
  incumbent: Weights;
  /** paper: the stored incumbent fitness. ab: the incumbent arm's p95 in the same trial. */
  incumbentP95TtftMs: number;
  /** Whether the incumbent after this step violates an absolute guardrail in its latest measurement. */
  incumbentGuardrail: IncumbentGuardrail;
  converged: boolean;
  /** Config version bound when the step closed. */
  configVersion: number | null;
  /** ab: the trial's evidence. */
  trial?: TrialReport;
}

export interface IncumbentRecord {
  weights: Weights;
  /** null until first measured. */
  p95TtftMs: number | null;
  e2eP95Ms: number | null;
  /** Max replica share and error rate of the incumbent's latest measurement; null until first measured. */
  maxShare: number | null;
  errorRate: number | null;
  guardrail: IncumbentGuardrail;
}

export interface TrialState {
  /** The candidate was planned (a mirrored loser or a repeated winner), not drawn. */
  planned?: boolean;
  /** The challenger is the tuner's initial weights (trial.baselineEvery): a check for harm, not a search step. */
  baseline?: boolean;
  id: string;
  salt: string;
  share: number;
  candidate: Weights;
  samples: TrialSample[];
  /** Requests peer LBs sent to each replica while this trial ran (the fleet share guardrail). */
  peerCounts: Record<string, number>;
  looks: number;
  /** α this trial has spent over its looks so far. Kept, not recomputed from `looks`: the cadence
   * and the cap may change mid-trial (the operator's settings), and a restart replays the samples
   * through fresh looks; either way no look may spend α that an earlier look already spent. */
  alphaSpent: number;
  /** The latest look's analysis (what the console shows while the trial runs). */
  latest: TrialAnalysis | null;
  /** Level tested at the latest look. */
  latestAlpha: number | null;
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
  /** Closed windows or decided trials so far. */
  step: number;
  incumbent: IncumbentRecord;
  manualWeights: Weights | null;
  /** What current() returns. */
  current: TunerCurrent;
  /** paper: the trailing window of all samples. */
  window: TunerSample[];
  /** paper: samples since the last evaluation. */
  samplesSinceEvaluation: number;
  /** ab: the running trial. */
  trial: TrialState | null;
  /** ab: trials started so far (part of each trial id). */
  trialsStarted: number;
  /** ab: the log-space step the next candidate takes from the incumbent (a mirrored loser or a repeated winner, search.ts); null: a fresh draw. */
  planned: Weights | null;
  /** Recent candidate outcomes for the 1/5 rule (true = accepted), oldest first. */
  outcomes: boolean[];
  candidatesSinceRemeasure: number;
  trajectory: TunerStep[];
  /** Why tuning is paused (the LB's policy ignores the weights), or null. Paused: no trial, no samples, the incumbent live. */
  paused: string | null;
}

export function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

export function unmeasured(weights: Weights): IncumbentRecord {
  return { weights: { ...weights }, p95TtftMs: null, e2eP95Ms: null, maxShare: null, errorRate: null, guardrail: "pass" };
}
