// What the tuner page shows of one LB's tuner: its state, the live trial with the latest look's
// evidence, and the persisted steps (the newest STEPS_SHOWN, with each trial's decision and reason;
// the run's step counts are counted over all of them).
import "server-only";
import { count, desc, eq, sql } from "drizzle-orm";
import type { EsTuner, TrialReport } from "@meridian/tuner";
import type { Queryable } from "@meridian/db";
import type { TunerSettings } from "./tuner-settings";

export interface TunerViewSource {
  runId: number;
  tuner: EsTuner;
  running: boolean;
  settings: TunerSettings;
}

function trialReportOf(json: string | null): TrialReport | null {
  if (json === null) return null;
  try {
    return JSON.parse(json) as TrialReport;
  } catch {
    return null;
  }
}

/** The newest steps the page charts and lists. */
const STEPS_SHOWN = 500;

export async function describeTuner({ db, tables }: Queryable, live: TunerViewSource) {
  const { tunerSteps } = tables;
  const state = live.tuner.state();
  const current = live.tuner.current();
  const trial = live.tuner.trial();
  const rows = (await db.select().from(tunerSteps).where(eq(tunerSteps.runId, live.runId)).orderBy(desc(tunerSteps.step)).limit(STEPS_SHOWN)).reverse();
  // Counted over the whole run: a run outlives the rows above (A/B trials decide at every look).
  const [totals] = await db
    .select({ steps: count(), accepted: count(sql`case when ${tunerSteps.accepted} then 1 end`) })
    .from(tunerSteps)
    .where(eq(tunerSteps.runId, live.runId));
  // tuner_steps has no column for the incumbent's guardrail standing; the tuner's own trajectory
  // (its last maxTrajectory steps, persisted with the state) carries it, which covers the rows the
  // UI shows. Older rows report null: unknown, not "pass".
  const incumbentGuardrailByStep = new Map(state.trajectory.map((t) => [t.step, t.incumbentGuardrail]));
  const steps = rows.map((s) => {
    const report = trialReportOf(s.trialJson);
    return {
      step: s.step,
      weights: { rtt: s.weightRtt, queue: s.weightQueue },
      fitnessP95TtftMs: s.fitnessP95TtftMs,
      sigma: s.sigma,
      accepted: s.accepted,
      // Informational: the candidate's own verdict. An accepted row may carry "share"/"errors" (a
      // less-bad violator accepted while the incumbent violated); `accepted` alone says what happened.
      guardrail: s.guardrail,
      incumbentGuardrail: incumbentGuardrailByStep.get(s.step) ?? null,
      kind: s.kind,
      configVersion: s.configVersion,
      at: s.at,
      // A/B trials: how the trial ended and on what evidence.
      decision: report?.decision ?? null,
      reason: report?.reason ?? null,
      incumbentP95TtftMs: report?.p95TtftMs.incumbent ?? null,
      pBetter: report?.pBetter ?? null,
      samples: report?.samples ?? null,
    };
  });
  const lastTrial = [...steps].reverse().find((s) => s.decision !== null) ?? null;
  const latest = trial?.latest ?? null;
  return {
    runId: live.runId,
    mode: state.mode,
    running: live.running && state.mode === "online" && (state.config.evaluation === "ab" || !state.converged),
    /** Why the tuner is paused (its LB's policy ignores the weights), or null: no trial runs meanwhile. */
    paused: state.paused,
    weights: current.weights,
    role: current.role,
    boundVersion: current.version,
    incumbent: state.incumbent.weights,
    incumbentP95TtftMs: state.incumbent.p95TtftMs,
    // Whether the incumbent's latest measurement broke an absolute guardrail ("pass" until measured);
    // while it does, the tuner accepts less-bad violators to climb out, and the UI warns.
    incumbentGuardrail: state.incumbent.guardrail,
    incumbentMaxShare: state.incumbent.maxShare,
    incumbentErrorRate: state.incumbent.errorRate,
    bounds: live.settings.bounds,
    window: live.settings.window,
    hop: live.settings.hop,
    evaluation: live.settings.evaluation,
    trialSettings: live.settings.trial,
    guardrails: live.settings.guardrails,
    sigma: state.sigma,
    converged: state.converged,
    windowFill: state.window.length,
    trial:
      trial === null
        ? null
        : {
            id: trial.id,
            /** False while the trial waits for the push rate limit: the LB still runs the previous one. */
            published: current.version !== null,
            share: trial.share,
            incumbent: current.weights,
            candidate: trial.candidate,
            samples: trial.samples,
            triggered: trial.triggered,
            maxSamples: trial.maxSamples,
            looks: trial.looks,
            p95TtftMs: latest ? { incumbent: latest.incumbent.p95TtftMs, candidate: latest.candidate.p95TtftMs } : null,
            p95Interval: latest ? { incumbent: latest.incumbent.p95Interval, candidate: latest.candidate.p95Interval } : null,
            pBetter: latest ? latest.p95.pBetter : null,
            alphaAtLook: trial.latestAlpha,
          },
    lastDecision: lastTrial ? { step: lastTrial.step, decision: lastTrial.decision!, reason: lastTrial.reason ?? "", accepted: lastTrial.accepted } : null,
    /** Every step of the run and how many were accepted (`steps` holds only the newest STEPS_SHOWN). */
    stepCount: totals?.steps ?? 0,
    acceptedCount: totals?.accepted ?? 0,
    steps,
  };
}
