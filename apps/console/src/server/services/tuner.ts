// Operator actions on a tuner, an LB's or the fleet's; each audited with the tuner's settings before
// and after, in the transaction that saves the change (the tuner service runs the audit step given
// here there): a change is saved with its audit row or not at all. A tuner is named by { lbId } or
// { fleet: true } (the router checks that exactly one is given).
import "server-only";
import { eq } from "drizzle-orm";
import { type Actor, recordAudit } from "../audit-trail";
import { DomainError, notFound } from "../errors";
import { currentRun } from "../runtime/tuner-runs";
import { FLEET, type TunerScope } from "../runtime/tuner-scope";
import type { AuditStep, TunerSettingsPatch } from "../runtime/tuner-service";
import { ChangeMaybeSavedError } from "./after-commit";
import type { ServiceRuntime } from "./context";

export { TUNER_SCOPES } from "../runtime/tuner-scope";

export interface TunerTarget {
  lbId?: string | undefined;
  fleet?: true | undefined;
}

/** The tuner service's key for the target: the LB's id, or FLEET. */
function keyOf(target: TunerTarget): string {
  return target.lbId ?? FLEET;
}

async function requireLb(rt: ServiceRuntime, lbId: string): Promise<void> {
  const { db, tables } = rt.store;
  const [lb] = await db.select({ id: tables.loadBalancers.id }).from(tables.loadBalancers).where(eq(tables.loadBalancers.id, lbId)).limit(1);
  if (!lb) throw notFound("load balancer", lbId);
}

/** The tuner's run as the database holds it: which run, at which revision (every write moves it). */
async function revisionOf(rt: ServiceRuntime, target: TunerTarget): Promise<string> {
  const run = await currentRun(rt.store, target.lbId ?? null);
  return run ? `${run.id}@${run.updatedAt}` : "none";
}

/** The answer to a change that failed: as is when nothing was written (a refusal, or a database error
 * before the run and its audit row were written); "may have been saved" once they were (the tuner
 * service writes the run, then pushes it: a failed push leaves the change saved) or when that is unknown. */
async function failedChange(rt: ServiceRuntime, target: TunerTarget, revision: string, error: unknown): Promise<unknown> {
  if (error instanceof DomainError) return error;
  const now = await revisionOf(rt, target).catch(() => undefined);
  if (now === revision) return error;
  rt.log.error({ lbId: target.lbId ?? null, err: error }, "tuner change failed after its run may have been written");
  return new ChangeMaybeSavedError(
    "the console's database failed while the tuner's change was being applied, after its run was written: the change may be saved, reload to check before retrying",
    { cause: error },
  );
}

/** How the tuner service writes `action`'s audit row, in the change's transaction. */
function auditStep(actor: Actor, action: string, target: string): AuditStep<unknown> {
  return async (tx, before, after) => await recordAudit(tx, actor, action, target, before, after);
}

/** Runs `change` with the audit step of `action` on the target's tuner; maps a failure (failedChange). */
async function audited(
  rt: ServiceRuntime,
  actor: Actor,
  action: string,
  target: TunerTarget,
  change: (key: string, audit: AuditStep<unknown>) => Promise<unknown>,
): Promise<void> {
  if (target.lbId !== undefined) await requireLb(rt, target.lbId);
  const revision = await revisionOf(rt, target);
  try {
    await change(keyOf(target), auditStep(actor, action, target.lbId !== undefined ? `lb:${target.lbId}` : "fleet"));
  } catch (error) {
    throw await failedChange(rt, target, revision, error);
  }
}

export async function tunerByLb(rt: ServiceRuntime, input: { lbId: string }) {
  await requireLb(rt, input.lbId);
  return await rt.tuners.describe(input.lbId);
}

/** The fleet's tuner; 412 while the scope is per LB. */
export async function fleetTuner(rt: ServiceRuntime) {
  return await rt.tuners.describe(FLEET);
}

export async function tunerScope(rt: ServiceRuntime): Promise<{ scope: TunerScope }> {
  return { scope: await rt.tuners.scope() };
}

/** A switch that failed is answered as is while the scope is still what it was (nothing was saved:
 * the switch and its audit row are one transaction), "may have been saved" once it moved (the LBs'
 * tuners are stopped or started afresh after it) or when that is unknown. */
export async function setTunerScope(rt: ServiceRuntime, actor: Actor, input: { scope: TunerScope }): Promise<void> {
  const before = await rt.tuners.scope();
  try {
    await rt.tuners.setScope(input.scope, auditStep(actor, "tuner.scope", "fleet"));
  } catch (error) {
    if (error instanceof DomainError || (await rt.tuners.scope().catch(() => undefined)) === before) throw error;
    rt.log.error({ scope: input.scope, err: error }, "tuning scope switch failed after the scope may have been switched");
    throw new ChangeMaybeSavedError(
      "the console's database failed while the tuning scope was being switched, after the switch was written: it may be saved, reload to check before retrying",
      { cause: error },
    );
  }
}

export async function startTuner(rt: ServiceRuntime, actor: Actor, input: TunerTarget): Promise<void> {
  await audited(rt, actor, "tuner.start", input, (key, audit) => rt.tuners.startTuning(key, audit));
}

export async function stopTuner(rt: ServiceRuntime, actor: Actor, input: TunerTarget): Promise<void> {
  await audited(rt, actor, "tuner.stop", input, (key, audit) => rt.tuners.stopTuning(key, audit));
}

export async function resetTuner(rt: ServiceRuntime, actor: Actor, input: TunerTarget): Promise<void> {
  await audited(rt, actor, "tuner.reset", input, (key, audit) => rt.tuners.reset(key, audit));
}

export async function setManualWeights(rt: ServiceRuntime, actor: Actor, input: TunerTarget & { weights: { rtt: number; queue: number } }): Promise<void> {
  await audited(rt, actor, "tuner.set-manual", input, (key, audit) => rt.tuners.setManual(key, input.weights, audit));
}

export async function updateTuner(rt: ServiceRuntime, actor: Actor, input: TunerTarget & TunerSettingsPatch): Promise<void> {
  const { lbId, fleet, ...patch } = input;
  await audited(rt, actor, "tuner.update", { lbId, fleet }, (key, audit) => rt.tuners.updateSettings(key, patch, audit));
}
