"use client";
// The tuner page's operator controls: mode (start/stop/reset), manual weights, and the tuner's
// settings (bounds, evaluation — A/B trials or the paper's windows — and guardrails), with a
// read-only view for viewers. Split from tuner.tsx, which shows the run.
import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { EVALUATION_MODES, type EvaluationMode } from "@meridian/tuner";
import type { RouterOutputs } from "../trpc/app-router";
import { fmtFactor, weightFieldText } from "../lib/format";
import { useTRPC } from "../trpc/client";
import { ConfirmButton, ErrorText, NumberField } from "./ui";
import { useInvalidateAll } from "./use-action";

type TunerState = RouterOutputs["tuner"]["byLb"];
type Bounds = TunerState["bounds"];

/** Which tuner the controls act on: an LB's, or the fleet's. */
export type TunerTarget = { lbId: string } | { fleet: true };

/** The guardrails' numeric limits, as the settings form lists them. */
const GUARDRAIL_FIELDS = [
  { key: "e2eRatio", label: "E2E p95 ratio g", testId: "tuner-guard-e2e" },
  { key: "maxShare", label: "Max replica share", testId: "tuner-guard-share" },
  { key: "maxErrorRate", label: "Max error rate", testId: "tuner-guard-errors" },
] as const;

const EVALUATION_LABELS: Record<EvaluationMode, string> = {
  ab: "A/B trials (candidate and incumbent side by side)",
  paper: "paper (GORGO's trailing windows)",
};

function outOfBounds(value: number, [lo, hi]: readonly [number, number]): boolean {
  return !Number.isFinite(value) || value < lo || value > hi;
}

/** A typed number, NaN when blank (`Number("")` is 0, which the server accepts for some fields). */
function typedNumber(text: string): number {
  return text.trim() === "" ? Number.NaN : Number(text);
}

export function ModeControls({ target, state }: { target: TunerTarget; state: TunerState }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  const start = useMutation(trpc.tuner.start.mutationOptions({ onSuccess: invalidateAll }));
  const stop = useMutation(trpc.tuner.stop.mutationOptions({ onSuccess: invalidateAll }));
  const reset = useMutation(trpc.tuner.reset.mutationOptions({ onSuccess: invalidateAll }));
  const busy = start.isPending || stop.isPending || reset.isPending;
  return (
    <div className="row-actions">
      <button type="button" className="btn btn-primary" disabled={busy || state.running} onClick={() => start.mutate(target)} data-testid="tuner-start">
        Start online tuning
      </button>
      <button type="button" className="btn" disabled={busy || !state.running} onClick={() => stop.mutate(target)} data-testid="tuner-stop">
        Stop (freeze weights)
      </button>
      {/* A new run, and the initial weights pushed at once (to every LB for the fleet's tuner): confirmed first. */}
      <ConfirmButton
        label="Reset"
        confirmLabel={"fleet" in target ? "Reset every LB to the initial weights" : "Reset this LB to the initial weights"}
        tone="warn"
        small={false}
        disabled={busy}
        onConfirm={() => reset.mutate(target)}
        testId="tuner-reset"
      />
      <ErrorText error={start.error ?? stop.error ?? reset.error} testId="tuner-mode-error" />
      <dl className="kv mode-help">
        <dt>online</dt>
        <dd>the (1+1)-ES proposes and scores candidates on live traffic</dd>
        <dt>static</dt>
        <dd>stopped: the best weights found stay in force</dd>
        <dt>manual</dt>
        <dd>the weights set by hand stay in force</dd>
        <dt>reset</dt>
        <dd>
          starts a new run from the initial weights and pushes them at once, to every LB for the fleet&apos;s tuner (asks to confirm; history is kept in the
          audit log)
        </dd>
      </dl>
    </div>
  );
}

export function ManualWeightsForm({ target, state }: { target: TunerTarget; state: TunerState }) {
  const trpc = useTRPC();
  const invalidateAll = useInvalidateAll();
  // What the operator typed, per field; null shows the live weight. The form is not re-keyed on the
  // weights (the tuner moves them every step): a step must not wipe what is being typed, nor the
  // server's error or "Pushed.". Tuner weights carry full float precision: a field shows significant
  // digits (fixed decimals showed a live 0.0003 as 0), and an untouched field submits the live value
  // itself, so changing one weight never pushes the other rounded (or refused as 0).
  const [typed, setTyped] = useState<{ rtt: string | null; queue: string | null }>({ rtt: null, queue: null });
  const rtt = typed.rtt ?? weightFieldText(state.weights.rtt);
  const queue = typed.queue ?? weightFieldText(state.weights.queue);
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
  const rttValue = typed.rtt === null ? state.weights.rtt : Number(typed.rtt);
  const queueValue = typed.queue === null ? state.weights.queue : Number(typed.queue);
  const rttBad = outOfBounds(rttValue, state.bounds.rtt);
  const queueBad = outOfBounds(queueValue, state.bounds.queue);

  function submit(e: FormEvent) {
    e.preventDefault();
    // Out-of-bounds values are still sent: the server is the authority and its message explains the rule.
    setManual.mutate({ ...target, weights: { rtt: rttValue, queue: queueValue } });
  }

  return (
    <form className="form-grid narrow" onSubmit={submit} noValidate data-testid="tuner-manual-form">
      <ManualWeightField name="W_rtt" field="rtt" bounds={state.bounds.rtt} value={rtt} bad={rttBad} onChange={type("rtt")} />
      <ManualWeightField name="W_queue" field="queue" bounds={state.bounds.queue} value={queue} bad={queueBad} onChange={type("queue")} />
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

/** One weight of the manual form, with its bounds beside it and a hint when the value lies outside them. */
function ManualWeightField({
  name,
  field,
  bounds,
  value,
  bad,
  onChange,
}: {
  name: string;
  field: "rtt" | "queue";
  bounds: readonly [number, number];
  value: string;
  bad: boolean;
  onChange: (e: { target: { value: string } }) => void;
}) {
  return (
    <label>
      {name}{" "}
      <span className="muted small">
        [{bounds[0]}, {bounds[1]}]
      </span>
      <input type="number" step="any" value={value} onChange={onChange} className={bad ? "invalid" : ""} data-testid={`tuner-manual-${field}`} />
      {bad ? (
        <span className="hint-bad" data-testid={`tuner-manual-${field}-hint`}>
          outside bounds
        </span>
      ) : null}
    </label>
  );
}

/** `saved`: the last save succeeded and nothing was edited since (held by the parent, since a save
 * re-keys this form); `onSaved` and `onEdited` report both. */
export function SettingsForm({
  target,
  state,
  saved,
  onSaved,
  onEdited,
}: {
  target: TunerTarget;
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
  const setBound = (k: keyof Bounds, i: 0 | 1) => (value: string) =>
    setBounds((b) => {
      const pair: [string, string] = [...b[k]];
      pair[i] = value;
      return { ...b, [k]: pair };
    });

  // A cleared guardrail field is not 0 (which the server takes for e2eRatio and maxErrorRate): the
  // form refuses to send it and says which field needs a number.
  const guardValues = {
    e2eRatio: typedNumber(guardrails.e2eRatio),
    maxShare: typedNumber(guardrails.maxShare),
    maxErrorRate: typedNumber(guardrails.maxErrorRate),
  };
  const guardInvalid = (key: (typeof GUARDRAIL_FIELDS)[number]["key"], label: string) =>
    Number.isFinite(guardValues[key]) ? null : `${label}: enter a number`;
  const blocked = GUARDRAIL_FIELDS.some(({ key, label }) => guardInvalid(key, label) !== null);

  function submit(e: FormEvent) {
    e.preventDefault();
    if (blocked) return;
    update.mutate({
      ...target,
      bounds: { rtt: [Number(bounds.rtt[0]), Number(bounds.rtt[1])], queue: [Number(bounds.queue[0]), Number(bounds.queue[1])] },
      window: Number(windowSize),
      hop: Number(hop),
      evaluation,
      trial: { share: Number(trial.share), lookEvery: Number(trial.lookEvery), maxSamples: Number(trial.maxSamples) },
      guardrails: { enabled: guardrails.enabled, ...guardValues },
    });
  }

  return (
    // onChange bubbles from every field: any edit means "Saved." no longer describes the form.
    <form className="form-grid" onSubmit={submit} onChange={onEdited} noValidate data-testid="tuner-settings-form">
      <fieldset>
        <legend>Bounds</legend>
        <NumberField label="W_rtt low" fractional value={bounds.rtt[0]} onChange={setBound("rtt", 0)} testId="tuner-bound-rtt-lo" />
        <NumberField label="W_rtt high" fractional value={bounds.rtt[1]} onChange={setBound("rtt", 1)} testId="tuner-bound-rtt-hi" />
        <NumberField label="W_queue low" fractional value={bounds.queue[0]} onChange={setBound("queue", 0)} testId="tuner-bound-queue-lo" />
        <NumberField label="W_queue high" fractional value={bounds.queue[1]} onChange={setBound("queue", 1)} testId="tuner-bound-queue-hi" />
      </fieldset>
      <fieldset>
        <legend>Evaluation</legend>
        {/* "Evaluation", not "Mode": the tuner's mode is online/static/manual, set by the buttons. */}
        <label>
          Evaluation
          <select value={evaluation} onChange={(e) => setEvaluation(e.target.value as EvaluationMode)} data-testid="tuner-evaluation">
            {/* The fleet's tuner runs A/B trials only (paper mode matches samples to one LB's config versions). */}
            {EVALUATION_MODES.filter((m) => !("fleet" in target) || m === "ab").map((m) => (
              <option key={m} value={m}>
                {EVALUATION_LABELS[m]}
              </option>
            ))}
          </select>
        </label>
        {evaluation === "ab" ? (
          <>
            <NumberField
              label="Candidate share of sessions"
              fractional
              value={trial.share}
              onChange={(share) => setTrial((t) => ({ ...t, share }))}
              testId="tuner-trial-share"
            />
            <NumberField
              label="Look every (samples)"
              value={trial.lookEvery}
              onChange={(lookEvery) => setTrial((t) => ({ ...t, lookEvery }))}
              testId="tuner-trial-look"
            />
            <NumberField
              label="Trial cap (samples)"
              value={trial.maxSamples}
              onChange={(maxSamples) => setTrial((t) => ({ ...t, maxSamples }))}
              testId="tuner-trial-cap"
            />
          </>
        ) : (
          <>
            <NumberField label="Window (samples)" value={windowSize} onChange={setWindowSize} testId="tuner-window" />
            <NumberField label="Hop" value={hop} onChange={setHop} testId="tuner-hop" />
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
        {GUARDRAIL_FIELDS.map(({ key, label, testId }) => (
          <NumberField
            key={key}
            label={label}
            fractional
            value={guardrails[key]}
            onChange={(value) => setGuardrails((g) => ({ ...g, [key]: value }))}
            testId={testId}
            invalid={guardInvalid(key, label)}
          />
        ))}
      </fieldset>
      <div className="form-actions">
        <button type="submit" className="btn btn-primary btn-solid" disabled={update.isPending || blocked} data-testid="tuner-settings-submit">
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
          ? `on — E2E ≤ ${fmtFactor(1 + state.guardrails.e2eRatio)}, share ≤ ${state.guardrails.maxShare}, errors ≤ ${state.guardrails.maxErrorRate}`
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
