// Where a tuner's current weights and trial go: the LB rows that do not carry them yet (its LB's, or
// for the fleet's tuner every member's, and a non-member's stale trial taken off), written and
// published as each LB's next config version; and how often a trial may go out (paceTrialPush).
// TunerService (tuner-service.ts) decides when.
import "server-only";
import { eq } from "drizzle-orm";
import { sameWeights, type TunerCurrent } from "@meridian/tuner";
import type { Queryable, Store } from "@meridian/db";
import type { ConfigPublisher } from "./config-publisher";
import type { LiveTuner } from "./tuner-live";
import { FLEET, fleetMembers, policyPause, type TunerKey } from "./tuner-scope";

/** One LB row to write. */
export interface RowWrite {
  lbId: string;
  set: { weightRtt?: number; weightQueue?: number; trialJson: string | null };
}

/** The LB rows `current` is not on yet, with what to write to each. */
export async function staleRows({ db, tables }: Queryable, key: TunerKey, current: TunerCurrent): Promise<RowWrite[]> {
  const { loadBalancers } = tables;
  const trialJson = current.trial === null ? null : JSON.stringify(current.trial);
  const rows = await db
    .select({
      id: loadBalancers.id,
      policy: loadBalancers.policy,
      weightRtt: loadBalancers.weightRtt,
      weightQueue: loadBalancers.weightQueue,
      trialJson: loadBalancers.trialJson,
    })
    .from(loadBalancers)
    .where(key === FLEET ? undefined : eq(loadBalancers.id, key));
  const writes: RowWrite[] = [];
  for (const lb of rows) {
    if (key === FLEET && policyPause(lb.policy) !== null) {
      if (lb.trialJson !== null) writes.push({ lbId: lb.id, set: { trialJson: null } });
      continue;
    }
    if (!sameWeights({ rtt: lb.weightRtt, queue: lb.weightQueue }, current.weights) || lb.trialJson !== trialJson) {
      writes.push({ lbId: lb.id, set: { weightRtt: current.weights.rtt, weightQueue: current.weights.queue, trialJson } });
    }
  }
  return writes;
}

/** Writes the rows and publishes each LB's config; returns the latest version that carries `current`
 * (null when none was recorded, e.g. on a follower). */
export async function pushRows(
  store: Store,
  publisher: Pick<ConfigPublisher, "publish">,
  key: TunerKey,
  current: TunerCurrent,
  writes: readonly RowWrite[],
): Promise<number | null> {
  const { loadBalancers } = store.tables;
  // Paper mode measures a candidate on the window after it went live; a version of its own (even
  // when the config did not change) keeps events routed before it from looking like its own.
  const force = current.role === "candidate" || current.role === "remeasure";
  let version: number | null = null;
  for (const write of writes) {
    await store.db.update(loadBalancers).set(write.set).where(eq(loadBalancers.id, write.lbId));
    version = (await publisher.publish(write.lbId, { force, source: "tuner" })) ?? version;
  }
  if (writes.length === 0) {
    // Every row already carries the weights: the latest version (of a member, for the fleet) does too.
    const lbId = key === FLEET ? (await fleetMembers(store))[0]?.id : key;
    if (lbId !== undefined) version = await publisher.publish(lbId, { force, source: "tuner" });
  }
  return version;
}

/** A real timer (for the rate limit's retry) that does not keep the process alive. */
export function defaultTimer(fn: () => void, ms: number): () => void {
  const timer = setTimeout(fn, ms);
  timer.unref();
  return () => clearTimeout(timer);
}

/**
 * Whether the tuner's trial may be pushed now. Trial pushes to one LB come at most every
 * `minIntervalMs`: a trial decided early would otherwise push a config every few requests. Too
 * soon, `retry` is scheduled (once) for when it may, and this answers false. An operator's action
 * goes out at once.
 */
export function paceTrialPush(
  live: LiveTuner,
  clock: { now: () => number; setTimer: (fn: () => void, ms: number) => () => void },
  minIntervalMs: number,
  operator: boolean,
  retry: () => void,
): boolean {
  const wait = live.lastTrialPushAt + minIntervalMs - clock.now();
  if (wait > 0 && !operator) {
    live.pendingPush ??= clock.setTimer(() => {
      live.pendingPush = null;
      retry();
    }, wait);
    return false;
  }
  live.lastTrialPushAt = clock.now();
  return true;
}
