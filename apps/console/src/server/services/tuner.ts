// Operator actions on an LB's tuner; each audited with the tuner's settings before and after.
import "server-only";
import { eq } from "drizzle-orm";
import { type Actor, recordAudit } from "../audit-trail";
import { notFound } from "../errors";
import type { TunerSettingsPatch } from "../runtime/tuner-service";
import type { ServiceRuntime } from "./context";

async function requireLb(rt: ServiceRuntime, lbId: string): Promise<void> {
  const { db, tables } = rt.store;
  const [lb] = await db.select({ id: tables.loadBalancers.id }).from(tables.loadBalancers).where(eq(tables.loadBalancers.id, lbId)).limit(1);
  if (!lb) throw notFound("load balancer", lbId);
}

async function snapshot(rt: ServiceRuntime, lbId: string) {
  const d = await rt.tuners.describe(lbId);
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

async function audited(rt: ServiceRuntime, actor: Actor, action: string, lbId: string, change: () => unknown): Promise<void> {
  await requireLb(rt, lbId);
  const before = await snapshot(rt, lbId);
  await change();
  const after = await snapshot(rt, lbId);
  await recordAudit(rt.store, actor, action, `lb:${lbId}`, before, after);
}

export async function tunerByLb(rt: ServiceRuntime, input: { lbId: string }) {
  await requireLb(rt, input.lbId);
  return await rt.tuners.describe(input.lbId);
}

export async function startTuner(rt: ServiceRuntime, actor: Actor, input: { lbId: string }): Promise<void> {
  await audited(rt, actor, "tuner.start", input.lbId, () => rt.tuners.startTuning(input.lbId));
}

export async function stopTuner(rt: ServiceRuntime, actor: Actor, input: { lbId: string }): Promise<void> {
  await audited(rt, actor, "tuner.stop", input.lbId, () => rt.tuners.stopTuning(input.lbId));
}

export async function resetTuner(rt: ServiceRuntime, actor: Actor, input: { lbId: string }): Promise<void> {
  await audited(rt, actor, "tuner.reset", input.lbId, () => rt.tuners.reset(input.lbId));
}

export async function setManualWeights(rt: ServiceRuntime, actor: Actor, input: { lbId: string; weights: { rtt: number; queue: number } }): Promise<void> {
  await audited(rt, actor, "tuner.set-manual", input.lbId, () => rt.tuners.setManual(input.lbId, input.weights));
}

export async function updateTuner(rt: ServiceRuntime, actor: Actor, input: { lbId: string } & TunerSettingsPatch): Promise<void> {
  const { lbId, ...patch } = input;
  await audited(rt, actor, "tuner.update", lbId, () => rt.tuners.updateSettings(lbId, patch));
}
