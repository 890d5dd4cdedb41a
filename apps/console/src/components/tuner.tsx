"use client";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import type { RouterOutputs } from "../trpc/app-router";
import { useTRPC } from "../trpc/client";
import { LIVE_INTERVAL_MS } from "../trpc/query-client";
import { fmtClock, fmtMs, fmtPctVersus, fmtWeight } from "../lib/format";
import { FitnessChart, SigmaChart, WeightTrajectoryChart } from "./charts";
import { LiveTrialPanel } from "./tuner-trial";
import { useCanMutate } from "./session";
import { Badge, ConfirmButton, ErrorText, PageHeader, Panel, QueryView, ReadOnlyNote, Stat } from "./ui";
import { ManualWeightsForm, ModeControls, ReadOnlySettings, SettingsForm, type TunerTarget } from "./tuner-controls";
import { FLEET_OPTION, useTuner, useTunerChoice } from "./tuner-choice";
import { useInvalidateAll } from "./use-action";

type TunerState = RouterOutputs["tuner"]["byLb"];

/**
 * Shown while the incumbent's latest window breaks an absolute guardrail: the weights in force are
 * known-bad (typically the W_queue → 0 reward hack), and the tuner is accepting less-bad candidates to
 * get out, so accepted rows may themselves carry a guardrail verdict.
 */
function IncumbentGuardrailWarning({ state }: { state: TunerState }) {
  if (state.incumbentGuardrail === "pass") return null;
  // Enough decimals that a value just over its cap does not print equal to it ("5.0% > 5.0%").
  const what =
    state.incumbentGuardrail === "share"
      ? `breaks the share cap (max replica share ${fmtPctVersus(state.incumbentMaxShare, state.guardrails.maxShare).join(" > ")})`
      : `breaks the error-rate cap (${fmtPctVersus(state.incumbentErrorRate, state.guardrails.maxErrorRate).join(" > ")})`;
  const action = state.running ? "the tuner is climbing out" : "start the tuner to climb out, or set weights by hand";
  return (
    <div className="stale-banner" role="alert" data-testid="tuner-incumbent-guardrail">
      <Badge tone="warn">guardrail: {state.incumbentGuardrail}</Badge> incumbent {what}: {action}.
    </div>
  );
}

/** Shown while the tuner is on but paused: its LB's policy ignores the weights, so no trial runs. */
function PausedNote({ state }: { state: TunerState }) {
  if (!state.running || state.paused === null) return null;
  return (
    <div className="stale-banner" role="status" data-testid="tuner-paused">
      <Badge tone="warn">paused</Badge> <span data-testid="tuner-paused-reason">{state.paused}</span>. No trial runs and the weights stay at the incumbent's;
      tuning resumes from the incumbent when the LB's policy uses the weights again.
    </div>
  );
}

/** Accepted is accepted; a guardrail verdict on an accepted row only says it was a less-bad violator. */
function StepOutcome({ step }: { step: TunerState["steps"][number] }) {
  if (!step.accepted) return <Badge tone={step.guardrail ? "warn" : "neutral"}>{step.guardrail ? `guardrail: ${step.guardrail}` : "rejected"}</Badge>;
  return (
    <>
      <Badge tone="ok">accepted</Badge>
      {step.guardrail ? (
        <>
          {" "}
          <Badge tone="warn" testId="tuner-step-accepted-guardrail">
            still breaks {step.guardrail} (less than before)
          </Badge>
        </>
      ) : null}
    </>
  );
}

/** Shown on an LB's tuner while the fleet's tuner sets every LB's weights. */
function FleetOwnsNote({ target, state }: { target: TunerTarget; state: TunerState }) {
  if ("fleet" in target || state.scope !== "fleet") return null;
  return (
    <div className="stale-banner" role="status" data-testid="tuner-fleet-owns">
      <Badge tone="info">scope: fleet</Badge> The fleet's tuner sets this LB's weights and trial. This LB's own tuner waits; switch the scope to per LB to tune
      it on its own.
    </div>
  );
}

function TunerView({ target }: { target: TunerTarget }) {
  const canMutate = useCanMutate();
  const tuner = useTuner(target);
  const viewKey = "fleet" in target ? "fleet" : target.lbId;
  // "Saved." lives here, not in the settings form: a save changes the server's settings, which
  // re-keys (re-mounts) the form, and the form's own mutation state would go with it.
  const [settingsSaved, setSettingsSaved] = useState(false);
  return (
    <QueryView query={tuner}>
      {(state) => {
        const scoredSteps = state.steps.filter((s) => s.fitnessP95TtftMs != null);
        // The charts hold the newest steps only; say so once the run has more.
        const truncated = state.stepCount > state.steps.length ? ` (last ${state.steps.length} steps)` : "";
        // Forms are keyed by the server values so a change from elsewhere (tuner step, other operator)
        // resets them rather than leaving stale edits that would silently revert it.
        const settingsKey = JSON.stringify([state.bounds, state.window, state.hop, state.evaluation, state.trialSettings, state.guardrails]);
        return (
          <>
            <FleetOwnsNote target={target} state={state} />
            <IncumbentGuardrailWarning state={state} />
            <PausedNote state={state} />
            <div className="stats">
              <Stat label="Tuner mode" value={<span data-testid="tuner-mode">{state.mode}</span>} />
              <Stat label="Status" value={<span data-testid="tuner-running">{state.running ? (state.paused ? "paused" : "running") : "stopped"}</span>} />
              <Stat label="W_rtt" value={fmtWeight(state.weights.rtt)} testId="tuner-weight-rtt" />
              <Stat label="W_queue" value={fmtWeight(state.weights.queue)} testId="tuner-weight-queue" />
              <Stat label="σ" value={state.sigma.toFixed(3)} testId="tuner-sigma" />
              {state.evaluation === "ab" ? (
                <Stat
                  label="Trial samples"
                  value={
                    <span data-testid="tuner-window-fill">
                      {state.trial ? state.trial.samples.incumbent + state.trial.samples.candidate : 0} / {state.trialSettings.maxSamples}
                    </span>
                  }
                />
              ) : (
                <Stat
                  label="Window fill"
                  value={
                    <span data-testid="tuner-window-fill">
                      {state.windowFill} / {state.window}
                    </span>
                  }
                />
              )}
              <Stat label="Incumbent p95 TTFT" value={fmtMs(state.incumbentP95TtftMs)} testId="tuner-incumbent-p95" />
              <Stat
                label="Steps (accepted)"
                value={
                  <span data-testid="tuner-steps">
                    {state.stepCount} ({state.acceptedCount})
                  </span>
                }
              />
              <Stat
                label="Converged"
                value={state.converged ? <Badge tone="ok">converged</Badge> : <Badge tone="neutral">no</Badge>}
                testId="tuner-converged"
              />
            </div>
            {state.evaluation === "ab" ? (
              <Panel title="Live trial" testId="tuner-trial-panel">
                <LiveTrialPanel trial={state.trial} last={state.lastDecision} paused={state.running ? state.paused : null} />
              </Panel>
            ) : null}
            {canMutate ? (
              <div className="grid-2">
                <Panel title="Tuner mode">
                  <ModeControls target={target} state={state} />
                </Panel>
                <Panel title="Manual weights">
                  <ManualWeightsForm key={viewKey} target={target} state={state} />
                </Panel>
              </div>
            ) : null}
            <div className="grid-2">
              <Panel title={`Fitness: p95 TTFT per step${truncated}`} testId="tuner-fitness-panel">
                {scoredSteps.length === 0 ? (
                  <div className="state state-empty" data-testid="tuner-fitness-empty">
                    No scored steps yet. Start the tuner; a point appears after each decided trial (or window, in paper mode).
                  </div>
                ) : (
                  <FitnessChart steps={state.steps} />
                )}
              </Panel>
              <Panel title="Step size σ">
                {state.steps.length === 0 ? <div className="state state-empty">No steps yet.</div> : <SigmaChart steps={state.steps} />}
              </Panel>
            </div>
            <div className="grid-2">
              <Panel title="Weight trajectory (W_rtt, W_queue)">
                <WeightTrajectoryChart steps={state.steps} bounds={state.bounds} current={state.weights} />
              </Panel>
              <Panel title="Settings">
                {canMutate ? (
                  <SettingsForm
                    key={`${viewKey}:${settingsKey}`}
                    target={target}
                    state={state}
                    saved={settingsSaved}
                    onSaved={() => setSettingsSaved(true)}
                    onEdited={() => setSettingsSaved(false)}
                  />
                ) : (
                  <ReadOnlySettings state={state} />
                )}
              </Panel>
            </div>
            <Panel title="Recent steps">
              {state.steps.length === 0 ? (
                <div className="state state-empty">No steps yet.</div>
              ) : (
                <div className="table-wrap scroll-y">
                  <table className="table compact" data-testid="tuner-steps-table">
                    <thead>
                      <tr>
                        <th>Step</th>
                        <th>At</th>
                        <th>Kind</th>
                        <th className="num">W_rtt</th>
                        <th className="num">W_queue</th>
                        <th className="num">p95 TTFT</th>
                        <th className="num">incumbent p95</th>
                        <th className="num">σ</th>
                        <th>Outcome</th>
                        <th>Why</th>
                        <th>Incumbent</th>
                      </tr>
                    </thead>
                    <tbody>
                      {state.steps
                        .slice(-30)
                        .reverse()
                        .map((s) => (
                          <tr key={`${s.step}-${s.kind}`} data-testid="tuner-step-row">
                            <td className="num">{s.step}</td>
                            <td>{fmtClock(s.at)}</td>
                            <td>{s.kind}</td>
                            <td className="num">{fmtWeight(s.weights.rtt)}</td>
                            <td className="num">{fmtWeight(s.weights.queue)}</td>
                            <td className="num">{fmtMs(s.fitnessP95TtftMs)}</td>
                            <td className="num">{fmtMs(s.incumbentP95TtftMs)}</td>
                            <td className="num">{s.sigma.toFixed(3)}</td>
                            <td>
                              <StepOutcome step={s} />
                            </td>
                            <td className="small muted" data-testid="tuner-step-reason">
                              {s.decision ? `${s.decision}: ${s.reason ?? ""}` : "–"}
                            </td>
                            <td>
                              {s.incumbentGuardrail == null ? (
                                <span className="muted">–</span>
                              ) : s.incumbentGuardrail === "pass" ? (
                                <span className="muted">ok</span>
                              ) : (
                                <Badge tone="warn">breaks {s.incumbentGuardrail}</Badge>
                              )}
                            </td>
                          </tr>
                        ))}
                    </tbody>
                  </table>
                </div>
              )}
            </Panel>
          </>
        );
      }}
    </QueryView>
  );
}

/** What a switch to each scope does to the LBs, shown beside the switch before the operator clicks,
 * and what the confirm button says (the switch asks for a second click, like Fail over). */
const SCOPE_SWITCH_HELP = {
  fleet:
    "Stops every LB's own tuner. One tuner then sets the weights of every LB whose policy uses them, starting stopped from the weights they all share (the defaults when they differ), with the settings the last fleet tuner had.",
  // The measured cost of per-LB scope (packages/tuner/README.md, bench:tuner with 30 seeds): each LB's tuner
  // scores only its own clients, so spreading that helps the fleet reads as its loss.
  lb: "Ends the fleet's tuner. Each LB gets its own tuner again, stopped, starting from the weights the fleet left on it. Each then scores only its own LB's requests: after a shift in load, per-LB tuners ended worse than the defaults in 18 of 30 simulated runs, the fleet's tuner in 5 (packages/tuner/README.md).",
} as const;
const SCOPE_SWITCH_CONFIRM = {
  fleet: "Stop every LB's tuner and switch",
  lb: "End the fleet's tuner and switch",
} as const;

/** The tuning scope, and (for operators) the switch between one tuner per LB and one for the fleet. */
function ScopeControl({ scope }: { scope: "lb" | "fleet" }) {
  const trpc = useTRPC();
  const canMutate = useCanMutate();
  const invalidateAll = useInvalidateAll();
  const setScope = useMutation(trpc.tuner.setScope.mutationOptions({ onSuccess: invalidateAll }));
  const next = scope === "fleet" ? "lb" : "fleet";
  return (
    <div className="scope-control">
      <span className="inline-label">
        Scope{" "}
        <Badge tone="info" testId="tuner-scope">
          {scope === "fleet" ? "fleet" : "per LB"}
        </Badge>
        {canMutate ? (
          <ConfirmButton
            label={next === "fleet" ? "One tuner for the fleet" : "One tuner per LB"}
            confirmLabel={SCOPE_SWITCH_CONFIRM[next]}
            tone="warn"
            disabled={setScope.isPending}
            onConfirm={() => setScope.mutate({ scope: next })}
            testId="tuner-scope-switch"
          />
        ) : null}
      </span>
      {canMutate ? (
        <div className="muted small" data-testid="tuner-scope-help">
          {SCOPE_SWITCH_HELP[next]}
        </div>
      ) : null}
      <ErrorText error={setScope.error} testId="tuner-scope-error" />
    </div>
  );
}

export function TunerPage() {
  const trpc = useTRPC();
  const canMutate = useCanMutate();
  const lbs = useQuery({ ...trpc.lbs.list.queryOptions(), refetchInterval: LIVE_INTERVAL_MS });
  const scope = useQuery({ ...trpc.tuner.scope.queryOptions(), refetchInterval: LIVE_INTERVAL_MS });
  // The fleet's tuner first while it is on; an LB's own tuner otherwise (tuner-choice.ts).
  const { value, target, select, fleetScope } = useTunerChoice(lbs.data, scope.data?.scope);

  return (
    <div data-testid="page-tuner">
      <PageHeader title="Tuner" subtitle="(1+1)-ES over (W_rtt, W_queue) against rolling p95 TTFT, per load balancer or for the whole fleet.">
        {scope.data ? <ScopeControl scope={scope.data.scope} /> : null}
        {lbs.data && lbs.data.length > 0 ? (
          <label className="inline-label">
            Tuner
            <select value={value ?? ""} onChange={(e) => select(e.target.value)} data-testid="tuner-lb-select">
              {fleetScope ? <option value={FLEET_OPTION}>the fleet (every LB that uses the weights)</option> : null}
              {lbs.data.map((lb) => (
                <option key={lb.id} value={lb.id}>
                  {lb.name} ({lb.region})
                </option>
              ))}
            </select>
          </label>
        ) : null}
      </PageHeader>
      {!canMutate ? <ReadOnlyNote /> : null}
      <QueryView query={lbs} isEmpty={(d) => d.length === 0} empty="No load balancers to tune.">
        {() => (target ? <TunerView key={value} target={target} /> : null)}
      </QueryView>
    </div>
  );
}
