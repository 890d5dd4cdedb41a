// The tuner's A/B trial as an LB applies it (packages/tuner/README.md). At admission a request joins
// the arm its session's salted hash gives it in the config's trial, and is routed with that arm's
// weights; a conversation therefore stays in one arm. At placement the core also asks the policy what
// the other arm's weights would have chosen in the same state: a request whose replica would have
// been the same under both weights is "not triggered", and carries no information about them.
import type { Decision, Weights } from "@meridian/routing";
import type { LbConfig } from "@meridian/protocol";
import { armOf, type Arm } from "@meridian/tuner";

/** A ticket's part in a trial. */
export interface TicketTrial {
  id: string;
  arm: Arm;
  /** The other arm's weights (for the counterfactual decision). */
  other: Weights;
  /** Set at placement on a replica; null until then (and for a request forwarded to a peer). */
  triggered: boolean | null;
}

/** The weights a new request is routed with, and its part in the config's trial (null outside one). */
export function admitToTrial(config: LbConfig, sessionKey: string): { weights: Weights; trial: TicketTrial | null } {
  const trial = config.trial;
  if (trial === undefined) return { weights: config.weights, trial: null };
  const arm = armOf(sessionKey, trial.salt, trial.share);
  const [weights, other] = arm === "candidate" ? [trial.candidate, config.weights] : [config.weights, trial.candidate];
  return { weights, trial: { id: trial.id, arm, other, triggered: null } };
}

/**
 * Whether the other arm's weights would have routed the request elsewhere: true when the replica
 * chosen is not among the best under the counterfactual decision's scores. Comparing against the
 * best score rather than the counterfactual's own pick keeps an exact tie (broken at random) from
 * counting as a difference.
 */
export function triggeredBy(actual: Decision, counterfactual: Decision): boolean {
  let best = Infinity;
  let chosen = Infinity;
  for (const s of counterfactual.scores) {
    if (s.score < best) best = s.score;
    if (s.id === actual.choice) chosen = s.score;
  }
  return chosen > best + 1e-9 * Math.max(1, Math.abs(best));
}
