// The search: a (1+1) evolution strategy over the cost weights (GORGO §2.2, eq. 4). A candidate is
// the incumbent perturbed multiplicatively, exp(ln w + σ·z) per weight, clipped to the bounds; σ
// follows Rechenberg's 1/5 success rule. Log space because the weights act through their ratios to
// each other and to the prefill term (W_prefill = 1): a step of σ scales a weight by the same factor
// wherever it sits in bounds that span three or more decades.

import { WEIGHT_NAMES, type TunerConfig, type Weights } from "./config";
import type { IncumbentGuardrail } from "./guardrails";
import { nextNormal, type PrngState } from "./prng";

export function mutate(incumbent: Weights, sigma: number, config: TunerConfig, prng: PrngState): Weights {
  const next = {} as Weights;
  for (const name of WEIGHT_NAMES) {
    const [lo, hi] = config.bounds[name];
    const z = nextNormal(prng);
    next[name] = Math.min(Math.max(Math.exp(Math.log(incumbent[name]) + sigma * z), lo), hi);
  }
  return next;
}

/**
 * Mirrored sampling (Brockhoff et al., "Mirrored sampling and sequential selection for evolution
 * strategies", PPSN 2010): after a candidate incumbent·exp(σz) loses, try incumbent·exp(−σz) next.
 * On a landscape that is locally a slope, the opposite step of a loser is more likely a winner than a
 * fresh random one, which matters when every candidate costs a trial of hundreds of requests. For
 * the same reason a winning step is tried once more from the new incumbent (a pattern-search move):
 * on a long slope, the direction that just won is the best guess for the next win.
 */
export function stepped(incumbent: Weights, step: Weights, config: TunerConfig): Weights {
  const next = {} as Weights;
  for (const name of WEIGHT_NAMES) {
    const [lo, hi] = config.bounds[name];
    next[name] = Math.min(Math.max(incumbent[name] * Math.exp(step[name]), lo), hi);
  }
  return next;
}

export function negated(step: Weights): Weights {
  return { rtt: -step.rtt, queue: -step.queue };
}

/** The log-space step from `from` to `to`. */
export function logStep(from: Weights, to: Weights): Weights {
  return { rtt: Math.log(to.rtt / from.rtt), queue: Math.log(to.queue / from.queue) };
}

/** Rechenberg's 1/5 rule over the last `successHistory` candidate outcomes; returns the new σ. */
export function adaptSigma(outcomes: boolean[], success: boolean, sigma: number, config: TunerConfig): number {
  outcomes.push(success);
  if (outcomes.length > config.successHistory) outcomes.shift();
  const rate = outcomes.filter(Boolean).length / outcomes.length;
  if (rate > config.targetSuccessRate) return Math.min(sigma / config.sigmaFactor, config.sigmaMax);
  if (rate < config.targetSuccessRate) return sigma * config.sigmaFactor;
  return sigma;
}

/**
 * σ while the incumbent violates an absolute guardrail. A violating incumbent is no optimum to settle
 * on: failed candidates around it would shrink σ under the 1/5 rule until the tuner "converged" on
 * the hack. So failures do not shrink σ (successes still widen it) and σ stays at σ0/2 or above.
 * Deep in the hack every nearby candidate violates just as badly (100 % on one replica is a plateau),
 * so a rejected candidate that also violates widens σ until a step is long enough to spread the load.
 * Not a hard reset to σ0: a tuner settled right at the share cap sees its incumbent flip in and out of
 * violation on sampling noise, and resetting σ on every flip kept it from converging.
 */
export function sigmaWhileViolating(sigma: number, sigmaBefore: number, config: TunerConfig, incumbent: IncumbentGuardrail, rejectedViolator: boolean): number {
  if (incumbent === "pass") return sigma;
  let next = Math.min(Math.max(sigma, sigmaBefore, config.sigma0 / 2), config.sigmaMax);
  if (rejectedViolator) next = Math.min(next / config.sigmaFactor, config.sigmaMax);
  return next;
}
