// A tuner as TunerService holds it in memory (its run's revision and push rate limit beside the
// EsTuner), and what the service does to one outside its queue: a restored state without replayed
// samples, a settings change, the run's random seed.
import "server-only";
import { EsTuner, resolveConfig, type TunerConfigInput, type TunerState } from "@meridian/tuner";
import type { TunerRunRow } from "@meridian/db";
import { configPatch, guard, mergeSettings, settingsOf, type TunerSettings, type TunerSettingsPatch } from "./tuner-settings";

export interface LiveTuner {
  runId: number;
  tuner: EsTuner;
  running: boolean;
  settings: TunerSettings;
  /** tuner_runs.updated_at (the run's revision: every write moves it forward) as this console last
   * read or wrote it: a different value means another console (an operator on a follower) changed the run. */
  writtenAt: number;
  /** When a trial was last pushed to the LB (rate limit). */
  lastTrialPushAt: number;
  /** Cancels a push waiting for the rate limit. */
  pendingPush: (() => void) | null;
}

/** Drops a push that waits for the rate limit (the tuner is going, or an operator's push goes now). */
export function cancelPendingPush(live: LiveTuner | undefined): void {
  if (!live) return;
  live.pendingPush?.();
  live.pendingPush = null;
}

/** The live tuner of `run` as just read or written: no trial pushed from this console yet. */
export function liveTuner(run: TunerRunRow, tuner: EsTuner): LiveTuner {
  return {
    runId: run.id,
    tuner,
    running: run.running,
    settings: settingsOf(tuner.state().config),
    lastTrialPushAt: -Infinity,
    pendingPush: null,
    writtenAt: run.updatedAt,
  };
}

export function seedFor(lbId: string, runId: number): number {
  let hash = 2166136261;
  for (const char of `${lbId}#${runId}`) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619) >>> 0;
  return hash;
}

/** A real timer that does not keep the process alive. */
export function defaultTimer(fn: () => void, ms: number): () => void {
  const timer = setTimeout(fn, ms);
  timer.unref();
  return () => clearTimeout(timer);
}

/**
 * The persisted trial's samples and peer counts may include events the TelemetryHub replays after a
 * restart (it resubscribes from seq 0 and the LB resends its buffer), so keeping them would count
 * those events twice. The trial restarts its count, and the replay refills it from the LB's record.
 */
function withoutReplayedSamples(state: TunerState): TunerState {
  const trial = state.trial ? { ...state.trial, samples: [], peerCounts: {}, looks: 0, latest: null, latestAlpha: null } : state.trial;
  return { ...state, window: [], samplesSinceEvaluation: 0, ...(trial !== undefined ? { trial } : {}) };
}

/** The tuner a run stored (throws on a state it cannot read), without its trial's samples: the
 * telemetry replay brings them again. */
export function restoredTuner(stateJson: string): EsTuner {
  return EsTuner.restore(withoutReplayedSamples(JSON.parse(stateJson) as TunerState));
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
