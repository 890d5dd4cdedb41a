"use client";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { EVALUATION_MODES, type EvaluationMode } from "@meridian/tuner";
import type { RouterOutputs } from "../trpc/app-router";
import { useTRPC } from "../trpc/client";
import { LIVE_INTERVAL_MS } from "../trpc/query-client";
import { fmtClock, fmtMs, fmtPct, fmtWeight } from "../lib/format";
import { FitnessChart, SigmaChart, WeightTrajectoryChart } from "./charts";
import { useCanMutate } from "./session";
import { Badge, ErrorText, PageHeader, Panel, QueryView, ReadOnlyNote, Stat } from "./ui";
import { useInvalidateAll } from "./use-action";

type TunerState = RouterOutputs["tuner"]["byLb"];
type Bounds = TunerState["bounds"];


function outOfBounds(value: number, [lo, hi]: readonly [number, number]): boolean {
  return !Number.isFinite(value) || value < lo || value > hi;
}

function ModeControls({ lbId, state }: { lbId: string; state: TunerState }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const start = useMutation(trpc.tuner.start.mutationOptions({ onSuccess: invalidateAll }));
  const stop = useMutation(trpc.tuner.stop.mutationOptions({ onSuccess: invalidateAll }));
  const reset = useMutation(trpc.tuner.reset.mutationOptions({ onSuccess: invalidateAll }));
  const busy = start.isPending || stop.isPending || reset.isPending;
  return (
    <div className="row-actions">
      <button type="button" className="btn btn-primary" disabled={busy || state.running} onClick={() => start.mutate({ lbId })} data-testid="tuner-start">Start online tuning</button>
      <button type="button" className="btn" disabled={busy || !state.running} onClick={() => stop.mutate({ lbId })} data-testid="tuner-stop">Stop (freeze weights)</button>
      <button type="button" className="btn btn-warn" disabled={busy} onClick={() => reset.mutate({ lbId })} data-testid="tuner-reset">Reset</button>
      <ErrorText error={start.error ?? stop.error ?? reset.error} testId="tuner-mode-error" />
      <dl className="kv mode-help">
        <dt>online</dt><dd>the (1+1)-ES proposes and scores candidates on live traffic</dd>
        <dt>static</dt><dd>stopped: the best weights found stay in force</dd>
        <dt>manual</dt><dd>the weights set by hand stay in force</dd>
        <dt>reset</dt><dd>starts a new run from the initial weights (history is kept in the audit log)</dd>
      </dl>
    </div>
  );
}

function ManualWeightsForm({ lbId, state }: { lbId: string; state: TunerState }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  // Tuner weights carry full float precision; three decimals is what an operator reads and types.
  const [rtt, setRtt] = useState(String(Number(state.weights.rtt.toFixed(3))));
  const [queue, setQueue] = useState(String(Number(state.weights.queue.toFixed(3))));
  const setManual = useMutation(trpc.tuner.setManual.mutationOptions({ onSuccess: invalidateAll }));
  const rttValue = Number(rtt);
  const queueValue = Number(queue);
  const rttBad = outOfBounds(rttValue, state.bounds.rtt);
  const queueBad = outOfBounds(queueValue, state.bounds.queue);

  function submit(e: FormEvent) {
    e.preventDefault();
    // Out-of-bounds values are still sent: the server is the authority and its message explains the rule.
    setManual.mutate({ lbId, weights: { rtt: rttValue, queue: queueValue } });
  }

  return (
    <form className="form-grid narrow" onSubmit={submit} noValidate data-testid="tuner-manual-form">
      <label>
        W_rtt <span className="muted small">[{state.bounds.rtt[0]}, {state.bounds.rtt[1]}]</span>
        <input type="number" step="any" value={rtt} onChange={(e) => setRtt(e.target.value)} className={rttBad ? "invalid" : ""} data-testid="tuner-manual-rtt" />
        {rttBad ? <span className="hint-bad" data-testid="tuner-manual-rtt-hint">outside bounds</span> : null}
      </label>
      <label>
        W_queue <span className="muted small">[{state.bounds.queue[0]}, {state.bounds.queue[1]}]</span>
        <input type="number" step="any" value={queue} onChange={(e) => setQueue(e.target.value)} className={queueBad ? "invalid" : ""} data-testid="tuner-manual-queue" />
        {queueBad ? <span className="hint-bad" data-testid="tuner-manual-queue-hint">outside bounds</span> : null}
      </label>
      <div className="form-actions">
        <button type="submit" className="btn btn-primary btn-solid" disabled={setManual.isPending} data-testid="tuner-manual-submit">Set manual weights</button>
        {setManual.isSuccess ? <span className="ok-text" data-testid="tuner-manual-ok">Pushed.</span> : null}
        <ErrorText error={setManual.error} testId="tuner-manual-error" />
      </div>
    </form>
  );
}

function SettingsForm({ lbId, state }: { lbId: string; state: TunerState }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const [bounds, setBounds] = useState<{ rtt: [string, string]; queue: [string, string] }>({
    rtt: [String(state.bounds.rtt[0]), String(state.bounds.rtt[1])],
    queue: [String(state.bounds.queue[0]), String(state.bounds.queue[1])],
  });
  const [windowSize, setWindowSize] = useState(String(state.window));
  const [hop, setHop] = useState(String(state.hop));
  const [evaluation, setEvaluation] = useState(state.evaluation);
  const [guardrails, setGuardrails] = useState({
    enabled: state.guardrails.enabled,
    e2eRatio: String(state.guardrails.e2eRatio),
    maxShare: String(state.guardrails.maxShare),
    maxErrorRate: String(state.guardrails.maxErrorRate),
  });
  const update = useMutation(trpc.tuner.update.mutationOptions({ onSuccess: invalidateAll }));
  const setBound = (k: keyof Bounds, i: 0 | 1) => (e: { target: { value: string } }) =>
    setBounds((b) => {
      const pair: [string, string] = [...b[k]];
      pair[i] = e.target.value;
      return { ...b, [k]: pair };
    });

  function submit(e: FormEvent) {
    e.preventDefault();
    update.mutate({
      lbId,
      bounds: { rtt: [Number(bounds.rtt[0]), Number(bounds.rtt[1])], queue: [Number(bounds.queue[0]), Number(bounds.queue[1])] },
      window: Number(windowSize),
      hop: Number(hop),
      evaluation,
      guardrails: {
        enabled: guardrails.enabled,
        e2eRatio: Number(guardrails.e2eRatio),
        maxShare: Number(guardrails.maxShare),
        maxErrorRate: Number(guardrails.maxErrorRate),
      },
    });
  }

  return (
    <form className="form-grid" onSubmit={submit} noValidate data-testid="tuner-settings-form">
      <fieldset>
        <legend>Bounds</legend>
        <label>W_rtt low<input type="number" step="any" value={bounds.rtt[0]} onChange={setBound("rtt", 0)} data-testid="tuner-bound-rtt-lo" /></label>
        <label>W_rtt high<input type="number" step="any" value={bounds.rtt[1]} onChange={setBound("rtt", 1)} data-testid="tuner-bound-rtt-hi" /></label>
        <label>W_queue low<input type="number" step="any" value={bounds.queue[0]} onChange={setBound("queue", 0)} data-testid="tuner-bound-queue-lo" /></label>
        <label>W_queue high<input type="number" step="any" value={bounds.queue[1]} onChange={setBound("queue", 1)} data-testid="tuner-bound-queue-hi" /></label>
      </fieldset>
      <fieldset>
        <legend>Evaluation</legend>
        <label>Window (samples)<input type="number" value={windowSize} onChange={(e) => setWindowSize(e.target.value)} data-testid="tuner-window" /></label>
        <label>Hop<input type="number" value={hop} onChange={(e) => setHop(e.target.value)} data-testid="tuner-hop" /></label>
        <label>Mode
          <select value={evaluation} onChange={(e) => setEvaluation(e.target.value as EvaluationMode)} data-testid="tuner-evaluation">
            {EVALUATION_MODES.map((m) => <option key={m} value={m}>{m}</option>)}
          </select>
        </label>
      </fieldset>
      <fieldset>
        <legend>Guardrails</legend>
        <label className="check"><input type="checkbox" checked={guardrails.enabled} onChange={(e) => setGuardrails((g) => ({ ...g, enabled: e.target.checked }))} data-testid="tuner-guard-enabled" /> enabled</label>
        <label>E2E p95 ratio g<input type="number" step="any" value={guardrails.e2eRatio} onChange={(e) => setGuardrails((g) => ({ ...g, e2eRatio: e.target.value }))} data-testid="tuner-guard-e2e" /></label>
        <label>Max replica share<input type="number" step="any" value={guardrails.maxShare} onChange={(e) => setGuardrails((g) => ({ ...g, maxShare: e.target.value }))} data-testid="tuner-guard-share" /></label>
        <label>Max error rate<input type="number" step="any" value={guardrails.maxErrorRate} onChange={(e) => setGuardrails((g) => ({ ...g, maxErrorRate: e.target.value }))} data-testid="tuner-guard-errors" /></label>
      </fieldset>
      <div className="form-actions">
        <button type="submit" className="btn btn-primary btn-solid" disabled={update.isPending} data-testid="tuner-settings-submit">Save tuner settings</button>
        {update.isSuccess ? <span className="ok-text" data-testid="tuner-settings-ok">Saved.</span> : null}
        <ErrorText error={update.error} testId="tuner-settings-error" />
      </div>
    </form>
  );
}

function ReadOnlySettings({ state }: { state: TunerState }) {
  return (
    <dl className="kv" data-testid="tuner-settings-readonly">
      <dt>Bounds W_rtt</dt><dd>[{state.bounds.rtt[0]}, {state.bounds.rtt[1]}]</dd>
      <dt>Bounds W_queue</dt><dd>[{state.bounds.queue[0]}, {state.bounds.queue[1]}]</dd>
      <dt>Window / hop</dt><dd>{state.window} / {state.hop}</dd>
      <dt>Evaluation</dt><dd>{state.evaluation}</dd>
      <dt>Guardrails</dt>
      <dd>{state.guardrails.enabled ? `on — E2E ≤ ${1 + state.guardrails.e2eRatio}×, share ≤ ${state.guardrails.maxShare}, errors ≤ ${state.guardrails.maxErrorRate}` : "off"}</dd>
    </dl>
  );
}

/**
 * Shown while the incumbent's latest window breaks an absolute guardrail: the weights in force are
 * known-bad (typically the W_queue → 0 reward hack), and the tuner is accepting less-bad candidates to
 * get out, so accepted rows may themselves carry a guardrail verdict.
 */
function IncumbentGuardrailWarning({ state }: { state: TunerState }) {
  if (state.incumbentGuardrail === "pass") return null;
  const what = state.incumbentGuardrail === "share"
    ? `breaks the share cap (max replica share ${fmtPct(state.incumbentMaxShare)} > ${fmtPct(state.guardrails.maxShare)})`
    : `breaks the error-rate cap (${fmtPct(state.incumbentErrorRate)} > ${fmtPct(state.guardrails.maxErrorRate)})`;
  const action = state.running ? "the tuner is climbing out" : "start the tuner to climb out, or set weights by hand";
  return (
    <div className="stale-banner" role="alert" data-testid="tuner-incumbent-guardrail">
      <Badge tone="warn">guardrail: {state.incumbentGuardrail}</Badge> incumbent {what}: {action}.
    </div>
  );
}

/** Accepted is accepted; a guardrail verdict on an accepted row only says it was a less-bad violator. */
function StepOutcome({ step }: { step: TunerState["steps"][number] }) {
  if (!step.accepted) return <Badge tone={step.guardrail ? "warn" : "neutral"}>{step.guardrail ? `guardrail: ${step.guardrail}` : "rejected"}</Badge>;
  return (
    <>
      <Badge tone="ok">accepted</Badge>
      {step.guardrail ? <> <Badge tone="warn" testId="tuner-step-accepted-guardrail">still breaks {step.guardrail} (less than before)</Badge></> : null}
    </>
  );
}

function TunerView({ lbId }: { lbId: string }) {
  const trpc = useTRPC();
  const canMutate = useCanMutate();
  const tuner = useQuery({ ...trpc.tuner.byLb.queryOptions({ lbId }), refetchInterval: LIVE_INTERVAL_MS });
  return (
    <QueryView query={tuner}>
      {(state) => {
        const scoredSteps = state.steps.filter((s) => s.fitnessP95TtftMs != null);
        const accepted = state.steps.filter((s) => s.accepted).length;
        // Forms are keyed by the server values so a change from elsewhere (tuner step, other operator)
        // resets them rather than leaving stale edits that would silently revert it.
        const settingsKey = JSON.stringify([state.bounds, state.window, state.hop, state.evaluation, state.guardrails]);
        return (
          <>
            <IncumbentGuardrailWarning state={state} />
            <div className="stats">
              <Stat label="Mode" value={<span data-testid="tuner-mode">{state.mode}</span>} />
              <Stat label="Status" value={<span data-testid="tuner-running">{state.running ? "running" : "stopped"}</span>} />
              <Stat label="W_rtt" value={fmtWeight(state.weights.rtt)} testId="tuner-weight-rtt" />
              <Stat label="W_queue" value={fmtWeight(state.weights.queue)} testId="tuner-weight-queue" />
              <Stat label="σ" value={state.sigma.toFixed(3)} testId="tuner-sigma" />
              <Stat label="Window fill" value={<span data-testid="tuner-window-fill">{state.windowFill} / {state.window}</span>} />
              <Stat label="Incumbent p95 TTFT" value={fmtMs(state.incumbentP95TtftMs)} testId="tuner-incumbent-p95" />
              <Stat label="Steps (accepted)" value={<span data-testid="tuner-steps">{state.steps.length} ({accepted})</span>} />
              <Stat label="Converged" value={state.converged ? <Badge tone="ok">converged</Badge> : <Badge tone="neutral">no</Badge>} testId="tuner-converged" />
            </div>
            {canMutate ? (
              <div className="grid-2">
                <Panel title="Mode"><ModeControls lbId={lbId} state={state} /></Panel>
                <Panel title="Manual weights"><ManualWeightsForm key={`${lbId}:${state.weights.rtt}:${state.weights.queue}`} lbId={lbId} state={state} /></Panel>
              </div>
            ) : null}
            <div className="grid-2">
              <Panel title="Fitness: p95 TTFT per step" testId="tuner-fitness-panel">
                {scoredSteps.length === 0 ? <div className="state state-empty" data-testid="tuner-fitness-empty">No scored steps yet. Start the tuner; a point appears after each evaluation window.</div> : <FitnessChart steps={state.steps} />}
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
                {canMutate ? <SettingsForm key={`${lbId}:${settingsKey}`} lbId={lbId} state={state} /> : <ReadOnlySettings state={state} />}
              </Panel>
            </div>
            <Panel title="Recent steps">
              {state.steps.length === 0 ? <div className="state state-empty">No steps yet.</div> : (
                <div className="table-wrap scroll-y">
                  <table className="table compact" data-testid="tuner-steps-table">
                    <thead><tr><th>Step</th><th>At</th><th>Kind</th><th className="num">W_rtt</th><th className="num">W_queue</th><th className="num">p95 TTFT</th><th className="num">σ</th><th>Outcome</th><th>Incumbent</th></tr></thead>
                    <tbody>
                      {state.steps.slice(-30).reverse().map((s) => (
                        <tr key={`${s.step}-${s.kind}`} data-testid="tuner-step-row">
                          <td className="num">{s.step}</td>
                          <td>{fmtClock(s.at)}</td>
                          <td>{s.kind}</td>
                          <td className="num">{fmtWeight(s.weights.rtt)}</td>
                          <td className="num">{fmtWeight(s.weights.queue)}</td>
                          <td className="num">{fmtMs(s.fitnessP95TtftMs)}</td>
                          <td className="num">{s.sigma.toFixed(3)}</td>
                          <td><StepOutcome step={s} /></td>
                          <td>{s.incumbentGuardrail == null ? <span className="muted">–</span> : s.incumbentGuardrail === "pass" ? <span className="muted">ok</span> : <Badge tone="warn">breaks {s.incumbentGuardrail}</Badge>}</td>
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

export function TunerPage() {
  const trpc = useTRPC();
  const canMutate = useCanMutate();
  const lbs = useQuery({ ...trpc.lbs.list.queryOptions(), refetchInterval: LIVE_INTERVAL_MS });
  const [selected, setSelected] = useState<string | null>(null);
  const lbId = selected ?? lbs.data?.[0]?.id ?? null;

  return (
    <div data-testid="page-tuner">
      <PageHeader title="Tuner" subtitle="(1+1)-ES over (W_rtt, W_queue) against rolling p95 TTFT, per load balancer.">
        {lbs.data && lbs.data.length > 0 ? (
          <label className="inline-label">
            Load balancer
            <select value={lbId ?? ""} onChange={(e) => setSelected(e.target.value)} data-testid="tuner-lb-select">
              {lbs.data.map((lb) => <option key={lb.id} value={lb.id}>{lb.name} ({lb.region})</option>)}
            </select>
          </label>
        ) : null}
      </PageHeader>
      {!canMutate ? <ReadOnlyNote /> : null}
      <QueryView query={lbs} isEmpty={(d) => d.length === 0} empty="No load balancers to tune.">
        {() => (lbId ? <TunerView key={lbId} lbId={lbId} /> : null)}
      </QueryView>
    </div>
  );
}
