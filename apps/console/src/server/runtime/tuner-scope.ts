// What the tuning scope means (TunerService, tuner-service.ts): per LB, each LB's tuner sets that LB's
// weights; fleet, one tuner (keyed FLEET, stored as a tuner run with no LB) sets the weights of every
// LB whose policy reads them, its members.
import "server-only";
import { DEFAULT_WEIGHTS, isPolicyName, policyUsesCostWeights } from "@meridian/routing";
import { sameWeights, type Weights } from "@meridian/tuner";
import type { Queryable } from "@meridian/db";

/** The fleet's tuner among the LBs' (an LB id is a slug of [a-z0-9-], never this). */
export const FLEET = "*";

/** The tuning scope: one tuner per LB, or one for the fleet. */
export const TUNER_SCOPES = ["lb", "fleet"] as const;
export type TunerScope = (typeof TUNER_SCOPES)[number];

/** An LB id, or FLEET. */
export type TunerKey = string;

/** The tuner run's LB: null for the fleet's run. */
export function lbIdOf(key: TunerKey): string | null {
  return key === FLEET ? null : key;
}

/** For messages. */
export function nameOf(key: TunerKey): string {
  return key === FLEET ? "the fleet" : key;
}

/** Why a tuner of an LB with this policy runs no trial, or null when the policy reads the weights. */
export function policyPause(policy: string): string | null {
  return isPolicyName(policy) && policyUsesCostWeights(policy) ? null : `the LB's policy, ${policy}, does not use W_rtt/W_queue`;
}

/** Why the fleet's tuner runs no trial while it has no members. */
export const NO_MEMBERS = "no LB's policy uses W_rtt/W_queue";

/** The LBs the fleet's tuner sets: those whose policy reads the weights. */
export async function fleetMembers({ db, tables }: Queryable) {
  const { loadBalancers } = tables;
  const lbs = await db
    .select({ id: loadBalancers.id, policy: loadBalancers.policy, weightRtt: loadBalancers.weightRtt, weightQueue: loadBalancers.weightQueue })
    .from(loadBalancers);
  return lbs.filter((lb) => policyPause(lb.policy) === null);
}

/** Where the fleet's tuner starts: the weights every member LB already runs (switching scope then
 * changes no LB's routing), or the defaults when they differ. */
export function agreedWeights(members: readonly { weightRtt: number; weightQueue: number }[]): Weights {
  const first = members[0];
  if (!first) return { ...DEFAULT_WEIGHTS };
  const weights = { rtt: first.weightRtt, queue: first.weightQueue };
  return members.every((m) => sameWeights({ rtt: m.weightRtt, queue: m.weightQueue }, weights)) ? weights : { ...DEFAULT_WEIGHTS };
}
