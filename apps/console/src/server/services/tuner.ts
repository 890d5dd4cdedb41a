// Operator actions on an LB's tuner; each audited with the tuner's settings before and after.
import "server-only";
import { eq } from "drizzle-orm";
import { loadBalancers } from "@meridian/db";
import { type Actor, recordAudit } from "../audit-trail";
import { notFound } from "../errors";
import type { TunerSettingsPatch } from "../runtime/tuner-service";
import type { ServiceRuntime } from "./context";

function requireLb(rt: ServiceRuntime, lbId: string): void {
  if (!rt.db.select({ id: loadBalancers.id }).from(loadBalancers).where(eq(loadBalancers.id, lbId)).get()) {
    throw notFound("load balancer", lbId);
  }
}

function snapshot(rt: ServiceRuntime, lbId: string) {
  const d = rt.tuners.describe(lbId);
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

function audited(rt: ServiceRuntime, actor: Actor, action: string, lbId: string, change: () => void): void {
  requireLb(rt, lbId);
  const before = snapshot(rt, lbId);
  change();
  const after = snapshot(rt, lbId);
  recordAudit(rt.db, actor, action, `lb:${lbId}`, before, after);
}

export function tunerByLb(rt: ServiceRuntime, input: { lbId: string }) {
  requireLb(rt, input.lbId);
  return rt.tuners.describe(input.lbId);
}

export function startTuner(rt: ServiceRuntime, actor: Actor, input: { lbId: string }): void {
  audited(rt, actor, "tuner.start", input.lbId, () => rt.tuners.startTuning(input.lbId));
}

export function stopTuner(rt: ServiceRuntime, actor: Actor, input: { lbId: string }): void {
  audited(rt, actor, "tuner.stop", input.lbId, () => rt.tuners.stopTuning(input.lbId));
}

export function resetTuner(rt: ServiceRuntime, actor: Actor, input: { lbId: string }): void {
  audited(rt, actor, "tuner.reset", input.lbId, () => rt.tuners.reset(input.lbId));
}

export function setManualWeights(rt: ServiceRuntime, actor: Actor, input: { lbId: string; weights: { rtt: number; queue: number } }): void {
  audited(rt, actor, "tuner.set-manual", input.lbId, () => rt.tuners.setManual(input.lbId, input.weights));
}

export function updateTuner(rt: ServiceRuntime, actor: Actor, input: { lbId: string } & TunerSettingsPatch): void {
  const { lbId, ...patch } = input;
  audited(rt, actor, "tuner.update", lbId, () => {
    rt.tuners.updateSettings(lbId, patch);
  });
}
