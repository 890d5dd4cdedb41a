"use client";
// The tuner page's operator controls: mode (start/stop/reset), manual weights, and the tuner's
// settings (bounds, evaluation — A/B trials or the paper's windows — and guardrails), with a
// read-only view for viewers. Split from tuner.tsx, which shows the run.
import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { EVALUATION_MODES, type EvaluationMode } from "@meridian/tuner";
import type { RouterOutputs } from "../trpc/app-router";
import { useTRPC } from "../trpc/client";
import { ErrorText } from "./ui";
import { useInvalidateAll } from "./use-action";

type TunerState = RouterOutputs["tuner"]["byLb"];
type Bounds = TunerState["bounds"];

const EVALUATION_LABELS: Record<EvaluationMode, string> = {
  ab: "A/B trials (candidate and incumbent side by side)",
  paper: "paper (GORGO's trailing windows)",
};

function outOfBounds(value: number, [lo, hi]: readonly [number, number]): boolean {
  return !Number.isFinite(value) || value < lo || value > hi;
}

export function ModeControls({ lbId, state }: { lbId: string; state: TunerState }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const start = useMutation(trpc.tuner.start.mutationOptions({ onSuccess: invalidateAll }));
  const stop = useMutation(trpc.tuner.stop.mutationOptions({ onSuccess: invalidateAll }));
  const reset = useMutation(trpc.tuner.reset.mutationOptions({ onSuccess: invalidateAll }));
  const busy = start.isPending || stop.isPending || reset.isPending;
  return (
    <div className="row-actions">
      <button type="button" className="btn btn-primary" disabled={busy || state.running} onClick={() => start.mutate({ lbId })} data-testid="tuner-start">
        Start online tuning
      </button>
      <button type="button" className="btn" disabled={busy || !state.running} onClick={() => stop.mutate({ lbId })} data-testid="tuner-stop">
        Stop (freeze weights)
      </button>
      <button type="button" className="btn btn-warn" disabled={busy} onClick={() => reset.mutate({ lbId })} data-testid="tuner-reset">
        Reset
      </button>
      <ErrorText error={start.error ?? stop.error ?? reset.error} testId="tuner-mode-error" />
      <dl className="kv mode-help">
        <dt>online</dt>
        <dd>the (1+1)-ES proposes and scores candidates on live traffic</dd>
        <dt>static</dt>
        <dd>stopped: the best weights found stay in force</dd>
        <dt>manual</dt>
        <dd>the weights set by hand stay in force</dd>
        <dt>reset</dt>
        <dd>starts a new run from the initial weights (history is kept in the audit log)</dd>
      </dl>
    </div>
  );
}

export function ManualWeightsForm({ lbId, state }: { lbId: string; state: TunerState }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  // What the operator typed, per field; null shows the live weight. The form is not re-keyed on the
  // weights (the tuner moves them every step): a step must not wipe what is being typed, nor the
  // server's error or "Pushed.". Tuner weights carry full float precision; three decimals is what an
  // operator reads and types.
  const [typed, setTyped] = useState<{ rtt: string | null; queue: string | null }>({ rtt: null, queue: null });
  const rtt = typed.rtt ?? String(Number(state.weights.rtt.toFixed(3)));
  const queue = typed.queue ?? String(Number(state.weights.queue.toFixed(3)));
  const setManual = useMutation(
    trpc.tuner.setManual.mutationOptions({
      onSuccess: async () => {
        // The pushed weights are now the live ones: show them from the server again.
        setTyped({ rtt: null, queue: null });
        await invalidateAll();
      },
    }),
  );
  const type = (field: "rtt" | "queue") => (e: { target: { value: string } }) => {
    setTyped((t) => ({ ...t, [field]: e.target.value }));
    // A new edit: the last push's outcome no longer describes what the form holds.
    if (setManual.isSuccess) setManual.reset();
  };
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
        W_rtt{" "}
        <span className="muted small">
          [{state.bounds.rtt[0]}, {state.bounds.rtt[1]}]
        </span>
        <input type="number" step="any" value={rtt} onChange={type("rtt")} className={rttBad ? "invalid" : ""} data-testid="tuner-manual-rtt" />
        {rttBad ? (
          <span className="hint-bad" data-testid="tuner-manual-rtt-hint">
            outside bounds
          </span>
        ) : null}
      </label>
      <label>
        W_queue{" "}
        <span className="muted small">
          [{state.bounds.queue[0]}, {state.bounds.queue[1]}]
        </span>
        <input type="number" step="any" value={queue} onChange={type("queue")} className={queueBad ? "invalid" : ""} data-testid="tuner-manual-queue" />
        {queueBad ? (
          <span className="hint-bad" data-testid="tuner-manual-queue-hint">
            outside bounds
          </span>
        ) : null}
      </label>
      <div className="form-actions">
        <button type="submit" className="btn btn-primary btn-solid" disabled={setManual.isPending} data-testid="tuner-manual-submit">
          Set manual weights
        </button>
        {setManual.isSuccess ? (
          <span className="ok-text" data-testid="tuner-manual-ok">
            Pushed.
          </span>
        ) : null}
        <ErrorText error={setManual.error} testId="tuner-manual-error" />
      </div>
    </form>
  );
}

/** `saved`: the last save succeeded and nothing was edited since (held by the parent, since a save
 * re-keys this form); `onSaved` and `onEdited` report both. */
export function SettingsForm({
  lbId,
  state,
  saved,
  onSaved,
  onEdited,
}: {
  lbId: string;
  state: TunerState;
  saved: boolean;
  onSaved: () => void;
  onEdited: () => void;
}) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const [bounds, setBounds] = useState<{ rtt: [string, string]; queue: [string, string] }>({
    rtt: [String(state.bounds.rtt[0]), String(state.bounds.rtt[1])],
    queue: [String(state.bounds.queue[0]), String(state.bounds.queue[1])],
  });
  const [windowSize, setWindowSize] = useState(String(state.window));
  const [hop, setHop] = useState(String(state.hop));
  const [evaluation, setEvaluation] = useState(state.evaluation);
  const [trial, setTrial] = useState({
    share: String(state.trialSettings.share),
    lookEvery: String(state.trialSettings.lookEvery),
    maxSamples: String(state.trialSettings.maxSamples),
  });
  const [guardrails, setGuardrails] = useState({
    enabled: state.guardrails.enabled,
    e2eRatio: String(state.guardrails.e2eRatio),
    maxShare: String(state.guardrails.maxShare),
    maxErrorRate: String(state.guardrails.maxErrorRate),
  });
  const update = useMutation(
    trpc.tuner.update.mutationOptions({
      onSuccess: async () => {
        onSaved();
        await invalidateAll();
      },
    }),
  );
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
      trial: { share: Number(trial.share), lookEvery: Number(trial.lookEvery), maxSamples: Number(trial.maxSamples) },
      guardrails: {
        enabled: guardrails.enabled,
        e2eRatio: Number(guardrails.e2eRatio),
        maxShare: Number(guardrails.maxShare),
        maxErrorRate: Number(guardrails.maxErrorRate),
      },
    });
  }

  return (
    // onChange bubbles from every field: any edit means "Saved." no longer describes the form.
    <form className="form-grid" onSubmit={submit} onChange={onEdited} noValidate data-testid="tuner-settings-form">
      <fieldset>
        <legend>Bounds</legend>
        <label>
          W_rtt low
          <input type="number" step="any" value={bounds.rtt[0]} onChange={setBound("rtt", 0)} data-testid="tuner-bound-rtt-lo" />
        </label>
        <label>
          W_rtt high
          <input type="number" step="any" value={bounds.rtt[1]} onChange={setBound("rtt", 1)} data-testid="tuner-bound-rtt-hi" />
        </label>
        <label>
          W_queue low
          <input type="number" step="any" value={bounds.queue[0]} onChange={setBound("queue", 0)} data-testid="tuner-bound-queue-lo" />
        </label>
        <label>
          W_queue high
          <input type="number" step="any" value={bounds.queue[1]} onChange={setBound("queue", 1)} data-testid="tuner-bound-queue-hi" />
        </label>
      </fieldset>
      <fieldset>
        <legend>Evaluation</legend>
        {/* "Evaluation", not "Mode": the tuner's mode is online/static/manual, set by the buttons. */}
        <label>
          Evaluation
          <select value={evaluation} onChange={(e) => setEvaluation(e.target.value as EvaluationMode)} data-testid="tuner-evaluation">
            {EVALUATION_MODES.map((m) => (
              <option key={m} value={m}>
                {EVALUATION_LABELS[m]}
              </option>
            ))}
          </select>
        </label>
        {evaluation === "ab" ? (
          <>
            <label>
              Candidate share of sessions
              <input
                type="number"
                step="any"
                value={trial.share}
                onChange={(e) => setTrial((t) => ({ ...t, share: e.target.value }))}
                data-testid="tuner-trial-share"
              />
            </label>
            <label>
              Look every (samples)
              <input
                type="number"
                value={trial.lookEvery}
                onChange={(e) => setTrial((t) => ({ ...t, lookEvery: e.target.value }))}
                data-testid="tuner-trial-look"
              />
            </label>
            <label>
              Trial cap (samples)
              <input
                type="number"
                value={trial.maxSamples}
                onChange={(e) => setTrial((t) => ({ ...t, maxSamples: e.target.value }))}
                data-testid="tuner-trial-cap"
              />
            </label>
          </>
        ) : (
          <>
            <label>
              Window (samples)
              <input type="number" value={windowSize} onChange={(e) => setWindowSize(e.target.value)} data-testid="tuner-window" />
            </label>
            <label>
              Hop
              <input type="number" value={hop} onChange={(e) => setHop(e.target.value)} data-testid="tuner-hop" />
            </label>
          </>
        )}
      </fieldset>
      <fieldset>
        <legend>Guardrails</legend>
        <label className="check">
          <input
            type="checkbox"
            checked={guardrails.enabled}
            onChange={(e) => setGuardrails((g) => ({ ...g, enabled: e.target.checked }))}
            data-testid="tuner-guard-enabled"
          />{" "}
          enabled
        </label>
        <label>
          E2E p95 ratio g
          <input
            type="number"
            step="any"
            value={guardrails.e2eRatio}
            onChange={(e) => setGuardrails((g) => ({ ...g, e2eRatio: e.target.value }))}
            data-testid="tuner-guard-e2e"
          />
        </label>
        <label>
          Max replica share
          <input
            type="number"
            step="any"
            value={guardrails.maxShare}
            onChange={(e) => setGuardrails((g) => ({ ...g, maxShare: e.target.value }))}
            data-testid="tuner-guard-share"
          />
        </label>
        <label>
          Max error rate
          <input
            type="number"
            step="any"
            value={guardrails.maxErrorRate}
            onChange={(e) => setGuardrails((g) => ({ ...g, maxErrorRate: e.target.value }))}
            data-testid="tuner-guard-errors"
          />
        </label>
      </fieldset>
      <div className="form-actions">
        <button type="submit" className="btn btn-primary btn-solid" disabled={update.isPending} data-testid="tuner-settings-submit">
          Save tuner settings
        </button>
        {saved && !update.isPending && !update.error ? (
          <span className="ok-text" data-testid="tuner-settings-ok">
            Saved.
          </span>
        ) : null}
        <ErrorText error={update.error} testId="tuner-settings-error" />
      </div>
    </form>
  );
}

export function ReadOnlySettings({ state }: { state: TunerState }) {
  return (
    <dl className="kv" data-testid="tuner-settings-readonly">
      <dt>Bounds W_rtt</dt>
      <dd>
        [{state.bounds.rtt[0]}, {state.bounds.rtt[1]}]
      </dd>
      <dt>Bounds W_queue</dt>
      <dd>
        [{state.bounds.queue[0]}, {state.bounds.queue[1]}]
      </dd>
      <dt>Evaluation</dt>
      <dd>{EVALUATION_LABELS[state.evaluation]}</dd>
      {state.evaluation === "ab" ? (
        <>
          <dt>Trials</dt>
          <dd>
            candidate share {state.trialSettings.share}, look every {state.trialSettings.lookEvery} samples, cap {state.trialSettings.maxSamples}
          </dd>
        </>
      ) : (
        <>
          <dt>Window / hop</dt>
          <dd>
            {state.window} / {state.hop}
          </dd>
        </>
      )}
      <dt>Guardrails</dt>
      <dd>
        {state.guardrails.enabled
          ? `on — E2E ≤ ${1 + state.guardrails.e2eRatio}×, share ≤ ${state.guardrails.maxShare}, errors ≤ ${state.guardrails.maxErrorRate}`
          : "off"}
      </dd>
    </dl>
  );
}

/**
 * Shown while the incumbent's latest window breaks an absolute guardrail: the weights in force are
 * known-bad (typically the W_queue → 0 reward hack), and the tuner is accepting less-bad candidates to
 * get out, so accepted rows may themselves carry a guardrail verdict.
 */
