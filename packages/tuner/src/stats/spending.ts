// Alpha spending for repeated looks at one trial. A trial is analysed every few samples and may stop
// at any look, so testing each look at level α would inflate the false-accept rate well beyond α
// (with ten looks, to about 20 % under a normal statistic). Each look k instead gets the increment
// α·(t_k^ρ − t_{k−1}^ρ) of a power-family spending function (Lan–DeMets, Kim–DeMets), where t is the
// fraction of the sample cap seen. The increments sum to α at the cap, and by the union bound the
// probability of any false accept over all looks is at most α, whatever the dependence between looks.

/** α spent by information fraction t (clamped to [0, 1]). ρ = 1 spends evenly (Pocock-like), larger ρ saves α for late looks (O'Brien–Fleming-like). */
export function alphaSpent(alpha: number, t: number, rho: number): number {
  const clamped = Math.min(1, Math.max(0, t));
  return alpha * clamped ** rho;
}

/** The level a look at fraction `t` may test at, when earlier looks spent `spent` of α. Keeping what
 * was spent (not the previous look's t) holds the total to α when the cap or cadence changes between
 * looks: a look whose t falls below what was already spent gets nothing. */
export function alphaForLook(alpha: number, spent: number, t: number, rho: number): number {
  return Math.max(0, alphaSpent(alpha, t, rho) - spent);
}
