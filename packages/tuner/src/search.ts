// The search: a (1+1) evolution strategy over the cost weights (GORGO §2.2, eq. 4). A candidate is
// the incumbent perturbed multiplicatively, exp(ln w + σ·z) per weight, clipped to the bounds; σ
// follows Rechenberg's 1/5 success rule. Log space because the weights act through their ratios to
// each other and to the prefill term (W_prefill = 1): a step of σ scales a weight by the same factor
// wherever it sits in bounds that span three or more decades.
//
// A candidate that lands outside the bounds is brought back in by landInBounds.

import { clipToBounds, WEIGHT_NAMES, type TunerConfig, type Weights } from "./config";
import type { IncumbentGuardrail } from "./guardrails";
import { nextNormal, type PrngState } from "./prng";

export function mutate(incumbent: Weights, sigma: number, config: TunerConfig, prng: PrngState): Weights {
  const next = {} as Weights;
  for (const name of WEIGHT_NAMES) next[name] = Math.exp(Math.log(incumbent[name]) + sigma * nextNormal(prng));
  return landInBounds(next, config);
}

/**
 * Brings a candidate outside the bounds back in. A/B mode keeps the step's ratio W_rtt/W_queue and
 * moves along the scale diagonal (both weights times one factor, the smallest that fits), clipping
 * only when the ratio itself lies beyond the box's. The ratio is what trades RTT against queueing;
 * clipping each weight on its own cancels most of a step that pushed one of them past its bound.
 * Measured: the mirror of a losing step (0.22, 2.47) from the defaults is (1.15, 0.004), which
 * clipping made (1.15, 0.05), a ratio of 23 where the step aimed at 290; on the short-prompt regime
 * the fleet tuner came within 10 % of the optimum in 1,000 samples 6 times of 10 instead of 3
 * (packages/tuner/README.md, "Measured"). Paper mode clips, as published.
 */
export function landInBounds(w: Weights, config: TunerConfig): Weights {
  if (config.evaluation === "paper") return clipToBounds(w, config.bounds);
  // The factor is e^c; c must lie in [lowest, highest] for every weight to fit.
  let lowest = -Infinity;
  let highest = Infinity;
  for (const name of WEIGHT_NAMES) {
    const [lo, hi] = config.bounds[name];
    lowest = Math.max(lowest, Math.log(lo / w[name]));
    highest = Math.min(highest, Math.log(hi / w[name]));
  }
  if (lowest > highest) return clipToBounds(w, config.bounds);
  const c = Math.min(Math.max(0, lowest), highest);
  const next = {} as Weights;
  for (const name of WEIGHT_NAMES) {
    const [lo, hi] = config.bounds[name];
    // The weight that set c lands exactly on its bound (w·e^c would miss it by a rounding).
    next[name] = c === Math.log(lo / w[name]) ? lo : c === Math.log(hi / w[name]) ? hi : Math.min(Math.max(w[name] * Math.exp(c), lo), hi);
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
  return landInBounds({ rtt: incumbent.rtt * Math.exp(step.rtt), queue: incumbent.queue * Math.exp(step.queue) }, config);
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
