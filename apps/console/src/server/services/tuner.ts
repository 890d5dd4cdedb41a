// Operator actions on a tuner, an LB's or the fleet's; each audited with the tuner's settings before
// and after. A tuner is named by { lbId } or { fleet: true } (the router checks that exactly one is given).
import "server-only";
import { eq } from "drizzle-orm";
import { type Actor, recordAudit } from "../audit-trail";
import { DomainError, notFound } from "../errors";
import { currentRun } from "../runtime/tuner-runs";
import { FLEET, type TunerScope } from "../runtime/tuner-scope";
import type { TunerSettingsPatch } from "../runtime/tuner-service";
import { afterCommit, ChangeMaybeSavedError } from "./after-commit";
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

async function snapshot(rt: ServiceRuntime, key: string) {
  const d = await rt.tuners.describe(key);
  return {
    mode: d.mode,
    running: d.running,
    weights: d.weights,
    bounds: d.bounds,
    window: d.window,
    hop: d.hop,
    evaluation: d.evaluation,
    trial: d.trialSettings,
    guardrails: d.guardrails,
  };
}

/** The tuner's run as the database holds it: which run, at which revision (every write moves it). */
async function revisionOf(rt: ServiceRuntime, target: TunerTarget): Promise<string> {
  const run = await currentRun(rt.store, target.lbId ?? null);
  return run ? `${run.id}@${run.updatedAt}` : "none";
}

/** The answer to a change that failed: as is when nothing was written (a refusal, or a database error
 * before the run was written); "may have been saved" once the run was written (the tuner service
 * writes the run, then pushes it: a failed push leaves the change saved) or when that is unknown. */
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

async function audited(rt: ServiceRuntime, actor: Actor, action: string, target: TunerTarget, change: () => unknown): Promise<void> {
  if (target.lbId !== undefined) await requireLb(rt, target.lbId);
  const key = keyOf(target);
  const before = await snapshot(rt, key);
  const revision = await revisionOf(rt, target);
  try {
    await change();
  } catch (error) {
    throw await failedChange(rt, target, revision, error);
  }
  // The change is saved: a failed audit row is logged (with the change), not answered as a failure.
  const where = target.lbId !== undefined ? `lb:${target.lbId}` : "fleet";
  await afterCommit(rt, action, { audit: async () => await recordAudit(rt.store, actor, action, where, before, await snapshot(rt, key)) });
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

export async function setTunerScope(rt: ServiceRuntime, actor: Actor, input: { scope: TunerScope }): Promise<void> {
  const before = await rt.tuners.scope();
  await rt.tuners.setScope(input.scope);
  await afterCommit(rt, "tuner.scope", {
    audit: async () => await recordAudit(rt.store, actor, "tuner.scope", "fleet", { scope: before }, { scope: await rt.tuners.scope() }),
  });
}

export async function startTuner(rt: ServiceRuntime, actor: Actor, input: TunerTarget): Promise<void> {
  await audited(rt, actor, "tuner.start", input, () => rt.tuners.startTuning(keyOf(input)));
}

export async function stopTuner(rt: ServiceRuntime, actor: Actor, input: TunerTarget): Promise<void> {
  await audited(rt, actor, "tuner.stop", input, () => rt.tuners.stopTuning(keyOf(input)));
}

export async function resetTuner(rt: ServiceRuntime, actor: Actor, input: TunerTarget): Promise<void> {
  await audited(rt, actor, "tuner.reset", input, () => rt.tuners.reset(keyOf(input)));
}

export async function setManualWeights(rt: ServiceRuntime, actor: Actor, input: TunerTarget & { weights: { rtt: number; queue: number } }): Promise<void> {
  await audited(rt, actor, "tuner.set-manual", input, () => rt.tuners.setManual(keyOf(input), input.weights));
}

export async function updateTuner(rt: ServiceRuntime, actor: Actor, input: TunerTarget & TunerSettingsPatch): Promise<void> {
  const { lbId, fleet, ...patch } = input;
  await audited(rt, actor, "tuner.update", { lbId, fleet }, () => rt.tuners.updateSettings(keyOf(input), patch));
}
