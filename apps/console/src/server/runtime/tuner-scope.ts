// What the tuning scope means (TunerService, tuner-service.ts). Per LB (a new console's scope; the
// demo switches to fleet, demo/seed.ts), each LB's tuner sets that LB's weights. Fleet: one tuner
// (key FLEET, stored as a tuner run with no LB) sets the weights and the trial of every LB whose
// policy reads them (its members) and scores every member's requests: one weight set, judged on the
// fleet's requests. While the fleet's run is open, the LBs' own tuners stand aside: they observe and
// publish nothing, and an operator's action on one is refused (412). Switching back ends the fleet's
// run and starts each LB's tuner afresh from the weights the fleet left on it. The fleet's tuner runs
// A/B trials only.
import "server-only";
import { DEFAULT_WEIGHTS, isPolicyName, policyUsesCostWeights } from "@meridian/routing";
import { type ForwardEntryView, sameWeights, type Weights } from "@meridian/tuner";
import { eq } from "drizzle-orm";
import type { Queryable } from "@meridian/db";
import { notFound, precondition } from "../errors";
import { currentRun } from "./tuner-runs";

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

/** Whether the fleet's tuner holds the events of the LB a forward entered at: its members are the LBs
 * whose policy reads the weights. One that did not say how it routed is taken to (nothing counts twice). */
export function fleetHoldsEntry(entry: ForwardEntryView): boolean {
  return entry.policy === undefined || policyPause(entry.policy) === null;
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

/** Where a new run of the tuner at `key` starts and why it would be paused (null: it runs): an LB's
 * from the LB's weights and policy; the fleet's from the weights its members share, paused while it
 * has none. Refuses an LB that does not exist, and the fleet's tuner while its run is not open. */
export async function startOf(q: Queryable, key: TunerKey): Promise<{ start: Weights; pause: string | null }> {
  const lbId = lbIdOf(key);
  if (lbId === null) {
    if (!(await currentRun(q, null))) throw precondition("the fleet tuner is off: switch the tuning scope to fleet first");
    const members = await fleetMembers(q);
    return { start: agreedWeights(members), pause: members.length > 0 ? null : NO_MEMBERS };
  }
  const { loadBalancers } = q.tables;
  const [lb] = await q.db.select().from(loadBalancers).where(eq(loadBalancers.id, lbId)).limit(1);
  if (!lb) throw notFound("load balancer", lbId);
  return { start: { rtt: lb.weightRtt, queue: lb.weightQueue }, pause: policyPause(lb.policy) };
}

/** The tuning scope as the database holds it: fleet while the fleet's run is open. */
export async function scopeOf(q: Queryable): Promise<TunerScope> {
  return (await currentRun(q, null)) ? "fleet" : "lb";
}

/** Refuses an operator's action on an LB's own tuner while the fleet's sets the LB's weights (read
 * from the database: on a follower the leader's copy is not at hand). */
export async function requireOwnScope(q: Queryable, key: TunerKey): Promise<void> {
  if (key !== FLEET && (await scopeOf(q)) === "fleet") {
    throw precondition(`the fleet tuner sets the weights of every LB (scope: fleet): switch the tuning scope to per LB to tune ${key} on its own`);
  }
}
