// A tuner as TunerService holds it in memory (its run's revision, its trial's start and push rate
// limit beside the EsTuner), and what the service does to one outside its queue: an LB's event fed
// to it, its stored state restored (without replayed samples after a start, with what it measured on
// a reload), an operator's change, the run's random seed.
import "server-only";
import {
  EsTuner,
  eventRole,
  type ForwardEntryView,
  resolveConfig,
  sampleFromEvent,
  type TunerConfigInput,
  type TunerState,
  type TunerStep,
  type Weights,
} from "@meridian/tuner";
import type { TelemetryEvent } from "@meridian/protocol";
import type { TunerRunRow } from "@meridian/db";
import { invalid } from "../errors";
import { configPatch, guard, mergeSettings, settingsOf, type TunerSettings, type TunerSettingsPatch } from "./tuner-settings";

export interface LiveTuner {
  runId: number;
  tuner: EsTuner;
  /** The fleet's tuner (its run has no LB): it sets several LBs' weights, and holds both events of a
   * forwarded request (eventRole). */
  spansLbs: boolean;
  running: boolean;
  settings: TunerSettings;
  /** tuner_runs.updated_at (the run's revision: every write moves it forward) as this console last
   * read or wrote it: a different value means another console (an operator on a follower) changed the run. */
  writtenAt: number;
  /** When a trial was last pushed to the LB (rate limit). */
  lastTrialPushAt: number;
  /** Cancels a push waiting for the rate limit. */
  pendingPush: (() => void) | null;
  /** When the running trial started (stampTrial), stored with the run's state. */
  trialStart: TrialStart | null;
  /** The measurement (measurementOf) whose samples this console's telemetry replay refills (restored
   * after a start without its stored samples): for it, the copy in memory is the only count of its
   * samples; null otherwise. */
  replayFed: string | null;
}

/** When a trial started, on this console's clock, and which trial. */
export interface TrialStart {
  id: string;
  at: number;
}

/** Drops a push that waits for the rate limit (the tuner is going, or an operator's push goes now). */
export function cancelPendingPush(live: LiveTuner | undefined): void {
  if (!live) return;
  live.pendingPush?.();
  live.pendingPush = null;
}

/** The live tuner of `run` as just read or written: no trial pushed from this console yet. Its
 * trial started at `trialStart` (as stored), or now: a trial the restore started. */
/** A tuner restored (or created) for a run, with what its LiveTuner keeps beside it. */
export interface RestoredTuner {
  tuner: EsTuner;
  trialStart: TrialStart | null;
  /** LiveTuner.replayFed (none for a new run). */
  replayFed?: string | null;
}

export function liveTuner(run: TunerRunRow, restored: RestoredTuner, now: number): LiveTuner {
  const { tuner, trialStart } = restored;
  const live: LiveTuner = {
    runId: run.id,
    tuner,
    spansLbs: run.lbId === null,
    running: run.running,
    settings: settingsOf(tuner.state().config),
    lastTrialPushAt: -Infinity,
    pendingPush: null,
    writtenAt: run.updatedAt,
    trialStart,
    replayFed: restored.replayFed ?? null,
  };
  stampTrial(live, now);
  return live;
}

/** When the running trial started: the first time this console saw it, which is `now` the first
 * time it is asked (persistRun asks at every write, and every operation that starts a trial writes
 * the run). */
export function stampTrial(live: { tuner: EsTuner; trialStart?: TrialStart | null }, now: number): number {
  const id = live.tuner.current().trial?.id;
  if (id === undefined) {
    live.trialStart = null;
    return now;
  }
  if (live.trialStart?.id !== id) live.trialStart = { id, at: now };
  return live.trialStart.at;
}

/**
 * Whether a peer LB's request is one of the running trial's: it finished after the trial started.
 * After a restart the TelemetryHub replays each LB's whole buffer (hours of requests, most of them
 * before the trial); counted, they would swamp the fleet-share guardrail. Compared on the LB's clock
 * against this console's: a skew between them moves the edge by as much.
 */
function peerDuringTrial(live: LiveTuner, event: Pick<TelemetryEvent, "time" | "e2eMs">, now: number): boolean {
  return event.time + event.e2eMs >= stampTrial(live, now);
}

/** Looks the running trial has had (0 without one). */
function looksOf(live: LiveTuner): number {
  return live.tuner.trial()?.looks ?? 0;
}

/**
 * One LB's event to a live tuner: a sample when it is of the tuner's own LB (`own`: for the fleet's,
 * a member's; `holdsEntry`: whether the tuner holds the events of the LB a forward entered at) and
 * the tuner's rules take it (eventRole: of a forwarded request, the fleet's tuner
 * samples the entry LB's event, or the serving member's when the entry LB's policy reads no weights;
 * sampleFromEvent: client errors and aborts are not samples),
 * else a peer request of its running trial. The step when a look decided the trial; `looked` when a
 * look decided nothing (it still spent α, which the run must record).
 */
export function feed(
  live: LiveTuner,
  event: TelemetryEvent,
  membership: { own: boolean; holdsEntry: (entry: ForwardEntryView) => boolean },
  now: number,
): { step: TunerStep | null; looked: boolean } {
  if (eventRole(event, { member: membership.own, spansLbs: live.spansLbs, holdsEntry: membership.holdsEntry }) === "peer") {
    if (peerDuringTrial(live, event, now)) live.tuner.observePeer({ replicaId: event.replicaId });
    return { step: null, looked: false };
  }
  const sample = sampleFromEvent(event);
  if (sample === null) return { step: null, looked: false };
  const looks = looksOf(live);
  const step = live.tuner.observe(sample);
  return { step, looked: step === null && looksOf(live) !== looks };
}

export function seedFor(lbId: string, runId: number): number {
  let hash = 2166136261;
  for (const char of `${lbId}#${runId}`) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619) >>> 0;
  return hash;
}

/** A run's state_json: the tuner's state, and when its trial started (absent in older states). */
type StoredState = TunerState & { trialStart?: TrialStart };

/** What a run stores of its tuner: the tuner's state, and its trial's start. */
export function storedStateJson(tunerState: TunerState, trialStart: TrialStart | null | undefined): string {
  const { trialStart: _stale, ...state } = tunerState as StoredState;
  return JSON.stringify(trialStart && trialStart.id === state.trial?.id ? { ...state, trialStart } : state);
}

function parseStored(stateJson: string): { state: TunerState; trialStart: TrialStart | undefined } {
  const { trialStart, ...state } = JSON.parse(stateJson) as StoredState;
  return { state, trialStart };
}

/** The tuner a run stored, as stored (throws on a state it cannot read). */
export function restoredTuner(stateJson: string): EsTuner {
  return EsTuner.restore(parseStored(stateJson).state);
}

/**
 * After a start, the persisted trial's samples and peer counts may include events the TelemetryHub
 * replays (it resubscribes from seq 0 and the LB resends its buffer), so keeping them would count
 * those events twice. The trial restarts its count, and the replay refills it from the LB's record;
 * it keeps the α its looks spent (alphaSpent, recorded at every look), so no look spends it again.
 */
function withoutReplayedSamples(state: TunerState): TunerState {
  const trial = state.trial ? { ...state.trial, samples: [], peerCounts: {}, looks: 0, latest: null, latestAlpha: null } : state.trial;
  return { ...state, window: [], samplesSinceEvaluation: 0, ...(trial !== undefined ? { trial } : {}) };
}

/**
 * What a tuner is measuring, which its samples belong to: its A/B trial, or in paper mode its window
 * at its step under the weights it measures; null when it measures nothing. Samples carry over a
 * reload only within one measurement.
 */
function measurementOf(state: TunerState): string | null {
  if (state.trial) return `trial ${state.trial.id}`;
  if (state.mode !== "online" || state.config.evaluation !== "paper") return null;
  const { role, weights } = state.current;
  return `paper step ${state.step} ${role} ${weights.rtt}/${weights.queue}`;
}

/** How many samples a state holds of its measurement. */
const measuredCount = (state: TunerState): number => (state.trial ? state.trial.samples.length : state.samplesSinceEvaluation);

/**
 * The stored state with what the copy in memory measured of the same measurement since the run was
 * written, as if the change that moved the run had been made on that copy: a trial's samples, peer
 * counts, looks and the α they spent, or a paper window; and the PRNG they drew from. A copy with
 * fewer samples than the run is stale (a follower's earlier read), and the run's are kept, unless a
 * replay is refilling the copy (`replayFed`): then the run's samples are events the rest of the
 * replay brings again, and the copy's count is the only true one.
 */
function withMeasurement(stored: TunerState, live: TunerState, replayFed: boolean): TunerState {
  const measurement = measurementOf(stored);
  if (measurement === null || measurement !== measurementOf(live)) return stored;
  if (!replayFed && measuredCount(live) < measuredCount(stored)) return stored;
  const { trial } = stored;
  const measured = live.trial;
  if (!trial || !measured) return { ...stored, prng: live.prng, window: live.window, samplesSinceEvaluation: live.samplesSinceEvaluation };
  const { samples, peerCounts, looks, latest, latestAlpha } = measured;
  const alphaSpent = Math.max(trial.alphaSpent, measured.alphaSpent);
  return { ...stored, prng: live.prng, trial: { ...trial, samples, peerCounts, looks, alphaSpent, latest, latestAlpha } };
}

/**
 * The live tuner of a run as stored (throws on a state it cannot read). `replayed`: after a start,
 * whose telemetry replay refills the trial (withoutReplayedSamples). Otherwise (a reload while the
 * subscriptions go on, a follower's read) the trial keeps what the run stored, or what `previous`,
 * the copy in memory of the same run, measured since; a copy that a replay still refills keeps its
 * own count, and the replay goes on refilling the reloaded one (`replayFed`). Restored once as
 * stored first, so a state older than alphaSpent rebuilds it from its looks before they are dropped.
 */
export function restoreRun(
  run: Pick<TunerRunRow, "id" | "updatedAt"> & { stateJson: string },
  how: { replayed?: boolean; previous?: LiveTuner | undefined },
): RestoredTuner {
  const stored = parseStored(run.stateJson);
  const asStored = EsTuner.restore(stored.state);
  const previous = how.previous?.runId === run.id ? how.previous : undefined;
  const storedMeasurement = measurementOf(asStored.state());
  // A reload while the replay still refills the measurement: it keeps refilling the reloaded copy.
  const replayFed = previous !== undefined && storedMeasurement !== null && previous.replayFed === storedMeasurement;
  const tuner = how.replayed
    ? EsTuner.restore(withoutReplayedSamples(asStored.state()))
    : previous
      ? EsTuner.restore(withMeasurement(asStored.state(), previous.tuner.state(), replayFed))
      : asStored;
  const id = tuner.current().trial?.id;
  // A state stored before trial starts were: its trial ran at least since the run's last write.
  const older = stored.state.trial?.id === id && id !== undefined ? { id, at: run.updatedAt } : null;
  const trialStart = [stored.trialStart, previous?.trialStart, older].find((start) => start != null && start.id === id) ?? null;
  const measuring = measurementOf(tuner.state());
  const fedByReplay = how.replayed || (replayFed && measuring === storedMeasurement);
  return { tuner, trialStart, replayFed: fedByReplay ? measuring : null };
}

/** The operator starts the tuner (online). */
export function startOnline(live: LiveTuner): void {
  guard(() => live.tuner.setMode("online"));
  live.running = true;
}

/** The operator's weights, within the tuner's bounds: manual mode, the tuner stopped. */
export function setManual(live: LiveTuner, weights: Weights): void {
  const [rlo, rhi] = live.settings.bounds.rtt;
  const [qlo, qhi] = live.settings.bounds.queue;
  if (weights.rtt < rlo || weights.rtt > rhi) throw invalid(`W_rtt ${weights.rtt} is outside the bounds [${rlo}, ${rhi}]`);
  if (weights.queue < qlo || weights.queue > qhi) throw invalid(`W_queue ${weights.queue} is outside the bounds [${qlo}, ${qhi}]`);
  guard(() => live.tuner.setManualWeights(weights));
  live.running = false;
}

/** Stops the tuner and freezes its incumbent: a candidate or trial under measurement must not stay live. */
export function freeze(live: LiveTuner): void {
  if (live.tuner.mode === "online") guard(() => live.tuner.setMode("static"));
  live.running = false;
}

/** Rebuilds the live tuner under `patch` (a change of evaluation mode restarts the measurement). */
export function applySettings(live: LiveTuner, patch: TunerSettingsPatch): TunerSettings {
  const next = mergeSettings(live.settings, patch);
  const state = live.tuner.state();
  const rebuilt = guard(() => {
    const config = { ...state.config, ...configPatch({ ...next, bounds: live.settings.bounds }, state.config) };
    // Checked as a fresh tuner's settings: restore raises a trial cap too small to ever accept (what
    // states saved before that rule need), where an operator's setting must be refused with why.
    resolveConfig(config as TunerConfigInput);
    const tuner = EsTuner.restore({ ...state, config: config as TunerState["config"] });
    if (patch.bounds) tuner.setBounds(next.bounds);
    // A change of evaluation mode restarts the measurement in the new mode.
    if (patch.evaluation !== undefined && patch.evaluation !== state.config.evaluation && tuner.mode === "online") {
      tuner.setMode("static");
      tuner.setMode("online");
    }
    return tuner;
  });
  live.tuner = rebuilt;
  live.settings = settingsOf(rebuilt.state().config);
  return live.settings;
}
