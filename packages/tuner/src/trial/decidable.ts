// How many samples an arm needs before a trial may decide on it, and whether trial settings leave
// room for that at all. One rule, read by the trial (ab-trial.ts) and by the settings' validation
// (config.ts), so a cap that could never allow an acceptance is refused when it is set. It takes the
// trial settings' fields, not config.ts's type, which imports this module.
import { samplesToSeeTail } from "../stats/quantile";
import { TRIAL_QUANTILE } from "./analysis";

/**
 * Each arm needs this many samples before a guardrail may decide a trial on its own, and this many
 * analysed (triggered) samples before its p95 may win one: enough that a 1-in-20 event shows up
 * at the trial's confidence (59 at 95 %). The guardrails judge 5 % error rates and shares of a
 * few sessions' requests; the test compares p95s. On fewer samples both read noise: measured on the
 * short-prompt regime, trials accepted with 10 and 22 triggered requests (p ≤ 0.004), and a
 * climb-out on a share of 0.86 among 50 requests adopted weights that doubled the p95 deployed
 * alone (packages/tuner/README.md, "Measured").
 */
export function armSamplesToDecide(trial: { confidence: number; lookEvery: number }): number {
  return Math.max(samplesToSeeTail(TRIAL_QUANTILE, trial.confidence), Math.floor(trial.lookEvery / 2));
}

/** The smallest cap at which the smaller arm is expected to reach armSamplesToDecide. */
export function smallestDecidableCap(trial: { confidence: number; lookEvery: number; share: number }): number {
  return Math.ceil(armSamplesToDecide(trial) / Math.min(trial.share, 1 - trial.share));
}
