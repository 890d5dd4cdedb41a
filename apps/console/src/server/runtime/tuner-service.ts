// TunerService: one EsTuner per LB, fed by the TelemetryHub.
// - Samples: every LB's telemetry event goes to every tuner: its own LB's events are samples (the
//   tuner's rule, sampleFromEvent: client errors and aborts are not), other LBs' events count toward
//   the fleet-share guardrail (observePeer).
// - A/B trials (the default): the tuner's current weights and trial are written to the LB row
//   (weight_*, trial_json) and published, so every config version — whatever triggered it — carries
//   the running trial; samples are matched to the trial by its id, not by config version. Trial pushes
//   to one LB are rate-limited (minTrialPushIntervalMs): a new trial due sooner waits.
// - The tuner's state is persisted to tuner_runs after every step and operator change, each step to
//   tuner_steps, and every new config version that carries the tuner's weights and trial rebinds and
//   persists it, so a console restart resumes where it stopped. A restored tuner starts its trial's
//   samples afresh: the TelemetryHub's replay of the LB's buffer refills them, so no event counts twice.
// - Paused: while the LB's policy does not read the cost weights (routing's Policy.usesCostWeights),
//   the tuner runs no trial and the incumbent stays live; every new config version re-checks the
//   policy, so switching back resumes from the incumbent.
// "running" = the tuner is stepping (mode online and started). stop() freezes the incumbent (static).
// - With several consoles, only the leader steps and publishes. A follower reads every tuner fresh
//   from the database and writes an operator's change there without publishing; the leader's
//   reconcile() reloads a run that someone else wrote and publishes what it wants live. A step whose
//   run changed underneath is not recorded (the run is reloaded instead).
//   "Changed" is told by tuner_runs.updated_at, which every write moves strictly forward (at least
//   +1 over what it was, whatever the writer's clock says), so it works as the run's revision: two
//   writes in the same millisecond, or a follower whose clock lags the leader's, still differ.
// - Every operation (an event, an operator's action, a new config version, the reconcile) runs one
//   at a time, in arrival order (exclusive()): the database work is async, and two operations
//   interleaving on one tuner would step from, or persist, each other's half-done state.
import "server-only";
import { eq } from "drizzle-orm";
import type { Logger } from "pino";
import { isPolicyName, policyUsesCostWeights } from "@meridian/routing";
import { EsTuner, sameWeights, sampleFromEvent, type TunerState, type TunerStep, type Weights } from "@meridian/tuner";
import type { LbConfig, TelemetryEvent } from "@meridian/protocol";
import type { Store, TunerRunRow } from "@meridian/db";
import { conflict, invalid, notFound } from "../errors";
import type { ConfigPublisher, PublishSource } from "./config-publisher";
import type { TelemetryHub } from "./telemetry-hub";
import { configPatch, guard, mergeSettings, settingsOf, type TunerSettings, type TunerSettingsPatch } from "./tuner-settings";
import { currentRun, newRun, persistRun, RunMoved, sameRevision } from "./tuner-runs";
import { describeTuner } from "./tuner-view";

export type { TunerSettings, TunerSettingsPatch } from "./tuner-settings";

/** Trial pushes to one LB come at most this often by default. */
const MIN_TRIAL_PUSH_INTERVAL_MS = 5_000;

/** What the tuner service uses, and nothing else. */
export interface TunerServiceDeps {
  store: Store;
  log: Logger;
  telemetry: Pick<TelemetryHub, "onEvent">;
  publisher: Pick<ConfigPublisher, "onNewVersion" | "publish">;
  /** The leadership term this console steps the tuners under (null: not the leader, 0: no election
   * runs). A step is recorded fenced by it, so a deposed leader that wakes up records none. */
  leadership: { currentTerm(): number | null };
  minTrialPushIntervalMs?: number;
  /** Clock and timer (tests substitute their own). */
  now?: () => number;
  setTimer?: (fn: () => void, ms: number) => () => void;
}

interface LiveTuner {
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

function seedFor(lbId: string, runId: number): number {
  let hash = 2166136261;
  for (const char of `${lbId}#${runId}`) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619) >>> 0;
  return hash;
}

function defaultTimer(fn: () => void, ms: number): () => void {
  const timer = setTimeout(fn, ms);
  timer.unref();
  return () => clearTimeout(timer);
}

/** How many times an operator's change is made on a run that another console wrote meanwhile. */
const OPERATOR_ATTEMPTS = 3;

export class TunerService {
  private readonly tuners = new Map<string, LiveTuner>();
  private subscribed = false;
  private readonly now: () => number;
  private readonly setTimer: (fn: () => void, ms: number) => () => void;
  private readonly minTrialPushIntervalMs: number;
  /** The tail of the operations queued so far (exclusive()). */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: TunerServiceDeps) {
    this.now = deps.now ?? Date.now;
    this.setTimer = deps.setTimer ?? defaultTimer;
    this.minTrialPushIntervalMs = deps.minTrialPushIntervalMs ?? MIN_TRIAL_PUSH_INTERVAL_MS;
  }

  /** Runs `work` after every operation queued before it, alone (no other operation of this service
   * interleaves with its awaits). Operations never queue from inside one another: they would wait
   * for themselves. */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Resolves once every operation queued so far (events included) has finished. */
  idle(): Promise<void> {
    return this.exclusive(async () => undefined);
  }

  start(): Promise<void> {
    // A console that leads again after losing the lease starts its tuners again: subscribe once.
    if (!this.subscribed) {
      this.subscribed = true;
      // The hub calls listeners synchronously, in the events' order; the queue keeps that order.
      this.deps.telemetry.onEvent((event) => {
        this.observe(event).catch((error: unknown) => this.deps.log.error({ lbId: event.lbId, err: error }, "tuner failed to observe an event"));
      });
      this.deps.publisher.onNewVersion((lbId, version, config, source) => this.onNewVersion(lbId, version, config, source));
    }
    return this.exclusive(async () => {
      // Copies read while following may be stale: lead from what the database holds.
      for (const live of this.tuners.values()) live.pendingPush?.();
      this.tuners.clear();
      const { db, tables } = this.deps.store;
      for (const lb of await db.select({ id: tables.loadBalancers.id }).from(tables.loadBalancers)) await this.load(lb.id);
      // Publish whatever the tuners want live (a restored trial whose version the LB never took).
      for (const lbId of [...this.tuners.keys()]) await this.applyCurrent(lbId);
    });
  }

  stop(): void {
    for (const live of this.tuners.values()) live.pendingPush?.();
    this.tuners.clear();
  }

  forget(lbId: string): void {
    this.tuners.get(lbId)?.pendingPush?.();
    this.tuners.delete(lbId);
  }

  /** The LB's live tuner, created (or restored from its current run) on first use. */
  ensure(lbId: string): Promise<LiveTuner> {
    return this.exclusive(() => this.load(lbId));
  }

  private async load(lbId: string): Promise<LiveTuner> {
    const existing = this.tuners.get(lbId);
    // A follower's copy would go stale as the leader steps: it reads the run again every time.
    if (existing && this.deps.leadership.currentTerm() !== null) return existing;
    const { db, tables } = this.deps.store;
    const [lb] = await db.select().from(tables.loadBalancers).where(eq(tables.loadBalancers.id, lbId)).limit(1);
    if (!lb) throw notFound("load balancer", lbId);
    let run = await this.currentRun(lbId);
    let tuner: EsTuner | null = null;
    if (run?.stateJson) {
      try {
        tuner = EsTuner.restore(withoutReplayedSamples(JSON.parse(run.stateJson) as TunerState));
      } catch (error) {
        this.deps.log.error({ lbId, err: error }, "stored tuner state unreadable; starting a new run");
        run = undefined;
      }
    }
    if (!run || !tuner) {
      const created = await this.newRun(lbId, { rtt: lb.weightRtt, queue: lb.weightQueue }, null, false);
      run = created.run;
      tuner = created.tuner;
    }
    const live: LiveTuner = {
      runId: run.id,
      tuner,
      running: run.running,
      settings: settingsOf(tuner.state().config),
      lastTrialPushAt: -Infinity,
      pendingPush: null,
      writtenAt: run.updatedAt,
    };
    this.tuners.set(lbId, live);
    if (this.syncPause(lbId, live, lb.policy)) {
      try {
        await this.persist(live, null, 0);
      } catch (error) {
        if (!(error instanceof RunMoved)) throw error;
        // Another console wrote the run between the read above and this write: read it again.
        this.tuners.delete(lbId);
        return this.load(lbId);
      }
    }
    return live;
  }

  /** Pauses the tuner while the LB's policy ignores the weights, resumes it when the policy reads them again. True when that changed anything. */
  private syncPause(lbId: string, live: LiveTuner, policy: string): boolean {
    const reason = isPolicyName(policy) && policyUsesCostWeights(policy) ? null : `the LB's policy, ${policy}, does not use W_rtt/W_queue`;
    if (reason === live.tuner.pausedReason) return false;
    if (reason === null) live.tuner.resume();
    else live.tuner.pause(reason);
    this.deps.log.info({ lbId, paused: reason }, reason === null ? "tuner resumed" : "tuner paused");
    return true;
  }

  private currentRun(lbId: string): Promise<TunerRunRow | undefined> {
    return currentRun(this.deps.store, lbId);
  }

  private newRun(lbId: string, weights: Weights, settings: TunerSettings | null, running: boolean): Promise<{ run: TunerRunRow; tuner: EsTuner }> {
    return newRun(this.deps.store, { lbId, weights, settings, running, seed: (runId) => seedFor(lbId, runId) }, this.now());
  }

  /** Records the state (and the step); see persistRun for the fencing. While this console leads,
   * every write is fenced by its term and by the run's revision, not only a step's: an unfenced
   * write of the leader's copy (binding a version, say) would silently undo an operator's change
   * that a follower wrote meanwhile. A follower's writes (operators' changes) are fenced by the
   * revision alone: one that lost a race to the leader's step is refused, not written over it. */
  private async persist(live: LiveTuner, step: TunerStep | null, term = this.deps.leadership.currentTerm() ?? 0): Promise<void> {
    live.writtenAt = await persistRun(this.deps.store, live, step, term, this.now());
  }

  /** Records the state; when another console wrote the run since this one read it, that write wins:
   * the run is reloaded from the database instead, and this returns false. */
  private async persistUnlessMoved(lbId: string, live: LiveTuner): Promise<boolean> {
    try {
      await this.persist(live, null);
      return true;
    } catch (error) {
      if (!(error instanceof RunMoved)) throw error;
      await this.reload(lbId);
      return false;
    }
  }

  /** The leader's own bookkeeping write (binding a version, a pause): a change from another console wins. */
  private async persistOrAdopt(lbId: string, live: LiveTuner): Promise<void> {
    if (!(await this.persistUnlessMoved(lbId, live))) this.deps.log.info({ lbId }, "tuner run changed on another console; adopted that change");
  }

  /** Before an operator's action on the leader: the run as the database holds it now (a follower
   * may have changed it since this console last read it). */
  private async fresh(lbId: string): Promise<LiveTuner> {
    const live = this.tuners.get(lbId);
    if (live && this.deps.leadership.currentTerm() !== null) {
      const run = await this.currentRun(lbId);
      if (!sameRevision(run, live)) this.tuners.delete(lbId);
    }
    return this.load(lbId);
  }

  /**
   * Every operator action, one way: under the lock, on the run as stored now (fresh), `change`
   * edits the live tuner; the result is recorded and pushed. When another console wrote the run in
   * the moment between reading and writing (on a follower, most often the leader recording a step or
   * binding a version), the change is made again on the run as it now stands: it is the operator's
   * intent (stop, these weights), not a copy of the state they saw. A run that keeps moving is
   * refused (409) rather than overwritten.
   */
  private operatorAction<T>(lbId: string, change: (live: LiveTuner) => T): Promise<T> {
    return this.exclusive(async () => {
      for (let attempt = 1; attempt <= OPERATOR_ATTEMPTS; attempt++) {
        const live = await this.fresh(lbId);
        const result = change(live);
        if (await this.persistUnlessMoved(lbId, live)) {
          await this.applyCurrent(lbId, true);
          return result;
        }
      }
      throw conflict(
        `the tuner of ${lbId} was changed on another console at the same moment, ${OPERATOR_ATTEMPTS} times; it shows that change now: retry if yours still applies`,
      );
    });
  }

  /** Leader: reloads each run that another console wrote since this one read it (an operator's
   * change on a follower, a reset there) and publishes what the reloaded tuner wants live. */
  reconcile(): Promise<void> {
    return this.exclusive(async () => {
      for (const [lbId, live] of [...this.tuners]) {
        const run = await this.currentRun(lbId);
        if (sameRevision(run, live)) continue;
        await this.reload(lbId);
      }
    });
  }

  private async reload(lbId: string): Promise<void> {
    this.tuners.get(lbId)?.pendingPush?.();
    this.tuners.delete(lbId);
    if (this.deps.leadership.currentTerm() === null) return;
    try {
      await this.load(lbId);
    } catch (error) {
      this.deps.log.warn({ lbId, err: error }, "tuner not reloaded");
      return;
    }
    await this.applyCurrent(lbId);
  }

  /** Publishes the tuner's current weights and trial when they are not live yet, and binds the version.
   * An operator's action publishes at once; a trial the tuner moved on to waits for the rate limit. */
  private async applyCurrent(lbId: string, operator = false): Promise<void> {
    const live = this.tuners.get(lbId);
    if (!live) return;
    // A follower publishes nothing: the leader's reconcile publishes what it wrote. Every caller has
    // just recorded the run (an operator's action, a reset), so there is nothing left to write.
    if (this.deps.leadership.currentTerm() === null) return;
    const current = live.tuner.current();
    if (current.version !== null) return;
    if (operator) {
      live.pendingPush?.();
      live.pendingPush = null;
    }
    if (current.trial !== null) {
      // Rate limit: a trial decided early would otherwise push a config every few requests.
      const wait = live.lastTrialPushAt + this.minTrialPushIntervalMs - this.now();
      if (wait > 0 && !operator) {
        if (live.pendingPush === null) {
          live.pendingPush = this.setTimer(() => {
            live.pendingPush = null;
            this.exclusive(async () => {
              if (this.tuners.get(lbId) === live) await this.applyCurrent(lbId);
            }).catch((error: unknown) => this.deps.log.error({ lbId, err: error }, "delayed trial push failed"));
          }, wait);
        }
        return;
      }
      live.lastTrialPushAt = this.now();
    }
    const { db, tables } = this.deps.store;
    const { loadBalancers } = tables;
    const [lb] = await db.select().from(loadBalancers).where(eq(loadBalancers.id, lbId)).limit(1);
    if (!lb) return;
    const trialJson = current.trial === null ? null : JSON.stringify(current.trial);
    if (!sameWeights({ rtt: lb.weightRtt, queue: lb.weightQueue }, current.weights) || lb.trialJson !== trialJson) {
      await db.update(loadBalancers).set({ weightRtt: current.weights.rtt, weightQueue: current.weights.queue, trialJson }).where(eq(loadBalancers.id, lbId));
    }
    // Paper mode measures a candidate on the window after it went live; a version of its own (even
    // when the config did not change) keeps events routed before it from looking like its own.
    const measuring = current.role === "candidate" || current.role === "remeasure";
    const version = await this.deps.publisher.publish(lbId, { force: measuring, source: "tuner" });
    // publish() binds through onNewVersion when it recorded a version; for unchanged weights and
    // trial the latest version already carries them.
    if (version !== null && live.tuner.current().version === null) live.tuner.bind(version);
    await this.persistOrAdopt(lbId, live);
  }

  /** A new config version for the LB (a tuner push, a topology change, a 409 bump): if it carries the
   * tuner's weights and trial, the tuner is bound to it — and that is persisted, so a restart resumes.
   * A version this service published comes from inside one of its operations and is handled there;
   * any other one is queued behind the operations in progress. */
  private onNewVersion(lbId: string, version: number, config: LbConfig, source: PublishSource): Promise<void> {
    const handle = () => this.handleNewVersion(lbId, version, config);
    return source === "tuner" ? handle() : this.exclusive(handle);
  }

  private async handleNewVersion(lbId: string, version: number, config: LbConfig): Promise<void> {
    const live = this.tuners.get(lbId);
    if (!live) return;
    if (this.syncPause(lbId, live, config.policy)) {
      // A pause must take the trial off the LB now; a resume starts the next trial at once.
      await this.persistOrAdopt(lbId, live);
      if (this.tuners.get(lbId) === live) await this.applyCurrent(lbId, true);
      return;
    }
    const current = live.tuner.current();
    const trial = current.trial === null ? undefined : current.trial;
    if (!sameWeights(current.weights, config.weights) || config.trial?.id !== trial?.id) return;
    if (current.version === version) return;
    live.tuner.bind(version);
    await this.persistOrAdopt(lbId, live);
  }

  /** One LB's finished request: a sample for that LB's tuner, a peer request for the others'.
   * Queued: events are observed in the order they arrived. */
  observe(event: TelemetryEvent): Promise<TunerStep | null> {
    return this.exclusive(() => this.observeNow(event));
  }

  private async observeNow(event: TelemetryEvent): Promise<TunerStep | null> {
    // A leader whose lease ran out stops stepping at once, before its duties are stopped.
    const term = this.deps.leadership.currentTerm();
    if (term === null) return null;
    let step: TunerStep | null = null;
    for (const [lbId, live] of this.tuners) {
      if (!live.running) continue;
      if (lbId !== event.lbId) {
        live.tuner.observePeer({ replicaId: event.replicaId });
        continue;
      }
      const sample = sampleFromEvent(event);
      if (sample === null) continue;
      step = live.tuner.observe(sample);
      if (!step) continue;
      if (step.converged && live.settings.evaluation === "paper") live.running = false;
      try {
        await this.persist(live, step, term);
      } catch (error) {
        if (!(error instanceof RunMoved)) throw error;
        // The lease moved on, or another console changed this run: the step is not recorded, and
        // the run is reloaded from the database (when this console still leads).
        this.deps.log.warn({ lbId, term, step: step.step }, "tuner run changed elsewhere or leadership lost; step not recorded");
        await this.reload(lbId);
        return null;
      }
      await this.applyCurrent(lbId);
    }
    return step;
  }

  // --- operator actions (audited by the service layer) ---------------------------------------

  startTuning(lbId: string): Promise<void> {
    return this.operatorAction(lbId, (live) => {
      guard(() => live.tuner.setMode("online"));
      live.running = true;
    });
  }

  stopTuning(lbId: string): Promise<void> {
    return this.operatorAction(lbId, (live) => {
      // Freeze the incumbent: a candidate or trial under measurement must not stay live.
      if (live.tuner.mode === "online") guard(() => live.tuner.setMode("static"));
      live.running = false;
    });
  }

  reset(lbId: string): Promise<void> {
    return this.exclusive(async () => {
      const live = await this.fresh(lbId);
      live.pendingPush?.();
      const state = live.tuner.state();
      const created = await this.newRun(lbId, state.initial, live.settings, live.running);
      this.tuners.set(lbId, { ...live, runId: created.run.id, tuner: created.tuner, pendingPush: null, writtenAt: created.run.updatedAt });
      await this.applyCurrent(lbId, true);
    });
  }

  setManual(lbId: string, weights: Weights): Promise<void> {
    return this.operatorAction(lbId, (live) => {
      const [rlo, rhi] = live.settings.bounds.rtt;
      const [qlo, qhi] = live.settings.bounds.queue;
      if (weights.rtt < rlo || weights.rtt > rhi) throw invalid(`W_rtt ${weights.rtt} is outside the bounds [${rlo}, ${rhi}]`);
      if (weights.queue < qlo || weights.queue > qhi) throw invalid(`W_queue ${weights.queue} is outside the bounds [${qlo}, ${qhi}]`);
      guard(() => live.tuner.setManualWeights(weights));
      live.running = false;
    });
  }

  updateSettings(lbId: string, patch: TunerSettingsPatch): Promise<TunerSettings> {
    return this.operatorAction(lbId, (live) => applySettings(live, patch));
  }

  describe(lbId: string) {
    return this.exclusive(async () => describeTuner(this.deps.store, await this.load(lbId)));
  }
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

/** Rebuilds the live tuner under `patch` (a change of evaluation mode restarts the measurement). */
function applySettings(live: LiveTuner, patch: TunerSettingsPatch): TunerSettings {
  const next = mergeSettings(live.settings, patch);
  const state = live.tuner.state();
  const rebuilt = guard(() => {
    const config = { ...state.config, ...configPatch({ ...next, bounds: live.settings.bounds }, state.config) };
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
