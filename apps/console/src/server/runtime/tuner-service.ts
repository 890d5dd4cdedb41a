// TunerService: one EsTuner per LB, or one for the whole fleet, fed by the TelemetryHub.
// - Scope. Per LB (the default), each LB's tuner sets that LB's weights. Fleet: one tuner (a run with
//   no LB, key FLEET) sets the weights and the trial of every LB whose policy reads them (its members),
//   and scores every member's requests: one weight set, judged on the fleet's requests. While the
//   fleet's run is open, the LBs' own tuners stand aside: they observe and publish nothing, and an
//   operator's action on one is refused (412). Switching back ends the fleet's run and starts each
//   LB's tuner afresh from the weights the fleet left on it. The fleet tuner runs A/B trials only.
// - Samples: every LB's telemetry event goes to every tuner: its own LB's events (a member's, for the
//   fleet) are samples (the tuner's rule, sampleFromEvent: client errors and aborts are not), other
//   LBs' events count toward the fleet-share guardrail (observePeer).
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
import { EsTuner, sameWeights, sampleFromEvent, type TunerState, type TunerStep, type Weights } from "@meridian/tuner";
import type { LbConfig, TelemetryEvent } from "@meridian/protocol";
import type { Store, TunerRunRow } from "@meridian/db";
import { conflict, invalid, notFound, precondition } from "../errors";
import type { ConfigPublisher, PublishSource } from "./config-publisher";
import type { TelemetryHub } from "./telemetry-hub";
import { configPatch, guard, mergeSettings, settingsOf, type TunerSettings, type TunerSettingsPatch } from "./tuner-settings";
import { currentRun, endFleetRun, newRun, persistRun, RunMoved, sameRevision } from "./tuner-runs";
import { agreedWeights, FLEET, fleetMembers, lbIdOf, NO_MEMBERS, nameOf, policyPause, type TunerKey, type TunerScope } from "./tuner-scope";
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
      if (await this.currentRun(FLEET)) await this.load(FLEET);
      // Publish whatever the tuners want live (a restored trial whose version the LB never took).
      for (const key of [...this.tuners.keys()]) await this.applyCurrent(key);
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

  private async load(key: TunerKey): Promise<LiveTuner> {
    const existing = this.tuners.get(key);
    // A follower's copy would go stale as the leader steps: it reads the run again every time.
    if (existing && this.deps.leadership.currentTerm() !== null) return existing;
    const lbId = lbIdOf(key);
    let start: Weights;
    let pause: string | null;
    if (lbId === null) {
      if (!(await this.currentRun(FLEET))) throw precondition("the fleet tuner is off: switch the tuning scope to fleet first");
      const members = await this.members();
      start = agreedWeights(members);
      pause = members.length > 0 ? null : NO_MEMBERS;
    } else {
      const { db, tables } = this.deps.store;
      const [lb] = await db.select().from(tables.loadBalancers).where(eq(tables.loadBalancers.id, lbId)).limit(1);
      if (!lb) throw notFound("load balancer", lbId);
      start = { rtt: lb.weightRtt, queue: lb.weightQueue };
      pause = policyPause(lb.policy);
    }
    let run = await this.currentRun(key);
    let tuner: EsTuner | null = null;
    if (run?.stateJson) {
      try {
        tuner = EsTuner.restore(withoutReplayedSamples(JSON.parse(run.stateJson) as TunerState));
      } catch (error) {
        this.deps.log.error({ lbId: key, err: error }, "stored tuner state unreadable; starting a new run");
        run = undefined;
      }
    }
    if (!run || !tuner) {
      const created = await this.newRun(key, start, null, false);
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
    this.tuners.set(key, live);
    if (this.syncPause(key, live, pause)) {
      try {
        await this.persist(live, null, 0);
      } catch (error) {
        if (!(error instanceof RunMoved)) throw error;
        // Another console wrote the run between the read above and this write: read it again.
        this.tuners.delete(key);
        return this.load(key);
      }
    }
    return live;
  }

  private members() {
    return fleetMembers(this.deps.store);
  }

  /** Pauses the tuner while its LB's policy ignores the weights (the fleet's: while no LB's reads
   * them), resumes it when they are read again. `reason` is why it should be paused, or null. True when that changed anything. */
  private syncPause(key: TunerKey, live: LiveTuner, reason: string | null): boolean {
    if (reason === live.tuner.pausedReason) return false;
    if (reason === null) live.tuner.resume();
    else live.tuner.pause(reason);
    this.deps.log.info({ lbId: key, paused: reason }, reason === null ? "tuner resumed" : "tuner paused");
    return true;
  }

  private currentRun(key: TunerKey): Promise<TunerRunRow | undefined> {
    return currentRun(this.deps.store, lbIdOf(key));
  }

  private newRun(key: TunerKey, weights: Weights, settings: TunerSettings | null, running: boolean): Promise<{ run: TunerRunRow; tuner: EsTuner }> {
    return newRun(this.deps.store, { lbId: lbIdOf(key), weights, settings, running, seed: (runId) => seedFor(key, runId) }, this.now());
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
  private async persistUnlessMoved(key: TunerKey, live: LiveTuner): Promise<boolean> {
    try {
      await this.persist(live, null);
      return true;
    } catch (error) {
      if (!(error instanceof RunMoved)) throw error;
      await this.reload(key);
      return false;
    }
  }

  /** The leader's own bookkeeping write (binding a version, a pause): a change from another console wins. */
  private async persistOrAdopt(key: TunerKey, live: LiveTuner): Promise<void> {
    if (!(await this.persistUnlessMoved(key, live))) this.deps.log.info({ lbId: key }, "tuner run changed on another console; adopted that change");
  }

  /** Before an operator's action on the leader: the run as the database holds it now (a follower
   * may have changed it since this console last read it). */
  private async fresh(key: TunerKey): Promise<LiveTuner> {
    const live = this.tuners.get(key);
    if (live && this.deps.leadership.currentTerm() !== null) {
      const run = await this.currentRun(key);
      if (!sameRevision(run, live)) this.tuners.delete(key);
    }
    return this.load(key);
  }

  /** Refuses an operator's action on an LB's own tuner while the fleet's sets the LB's weights (read
   * from the database: on a follower the leader's copy is not here). */
  private async requireOwnScope(key: TunerKey): Promise<void> {
    if (key !== FLEET && (await this.currentRun(FLEET))) {
      throw precondition(`the fleet tuner sets the weights of every LB (scope: fleet): switch the tuning scope to per LB to tune ${key} on its own`);
    }
  }

  /**
   * Every operator action, one way: under the lock, on the run as stored now (fresh), `change`
   * edits the live tuner; the result is recorded and pushed. When another console wrote the run in
   * the moment between reading and writing (on a follower, most often the leader recording a step or
   * binding a version), the change is made again on the run as it now stands: it is the operator's
   * intent (stop, these weights), not a copy of the state they saw. A run that keeps moving is
   * refused (409) rather than overwritten.
   */
  private operatorAction<T>(key: TunerKey, change: (live: LiveTuner) => T): Promise<T> {
    return this.exclusive(async () => {
      await this.requireOwnScope(key);
      for (let attempt = 1; attempt <= OPERATOR_ATTEMPTS; attempt++) {
        const live = await this.fresh(key);
        const result = change(live);
        if (await this.persistUnlessMoved(key, live)) {
          await this.applyCurrent(key, true);
          return result;
        }
      }
      throw conflict(
        `the tuner of ${nameOf(key)} was changed on another console at the same moment, ${OPERATOR_ATTEMPTS} times; it shows that change now: retry if yours still applies`,
      );
    });
  }

  /** Leader: reloads each run that another console wrote since this one read it (an operator's
   * change on a follower, a reset there, a change of scope) and publishes what the reloaded tuner
   * wants live. */
  reconcile(): Promise<void> {
    return this.exclusive(async () => {
      // The scope first: the LBs' tuners publish only once the fleet's (ended on a follower) is gone.
      const fleetRun = await this.currentRun(FLEET);
      const fleet = this.tuners.get(FLEET);
      if (fleet && !sameRevision(fleetRun, fleet)) await this.reload(FLEET);
      for (const [key, live] of [...this.tuners]) {
        if (key === FLEET) continue;
        const run = await this.currentRun(key);
        if (sameRevision(run, live)) continue;
        await this.reload(key);
      }
      // A follower switched the scope to fleet: its run is open and not here yet.
      if (!this.tuners.has(FLEET) && fleetRun) await this.reload(FLEET);
      // Whatever loaded the fleet's tuner here (a page's describe() reads it too), its weights and
      // trial reach every member: a no-op when they already have them.
      else if (this.tuners.has(FLEET)) await this.applyCurrent(FLEET);
    });
  }

  private async reload(key: TunerKey): Promise<void> {
    this.tuners.get(key)?.pendingPush?.();
    this.tuners.delete(key);
    if (this.deps.leadership.currentTerm() === null) return;
    try {
      await this.load(key);
    } catch (error) {
      // An LB deleted meanwhile, or the fleet's run ended: nothing to reload.
      this.deps.log.warn({ lbId: key, err: error }, "tuner not reloaded");
      return;
    }
    await this.applyCurrent(key);
  }

  /** Publishes the tuner's current weights and trial where they are not live yet, and binds the version:
   * to its LB, or for the fleet's tuner to every member (taking a trial off the LBs that are not).
   * An operator's action publishes at once; a trial the tuner moved on to waits for the rate limit. */
  private async applyCurrent(key: TunerKey, operator = false): Promise<void> {
    const live = this.tuners.get(key);
    if (!live) return;
    // A follower publishes nothing: the leader's reconcile publishes what it wrote. Every caller has
    // just recorded the run (an operator's action, a reset), so there is nothing left to write.
    if (this.deps.leadership.currentTerm() === null) return;
    // While the fleet's tuner is on, it alone sets the LBs' weights.
    if (key !== FLEET && this.tuners.has(FLEET)) return;
    const current = live.tuner.current();
    if (key !== FLEET && current.version !== null) return;
    const targets = await this.targetsOf(key, current);
    // The fleet's tuner may be bound and still owe a new member its weights.
    if (key === FLEET && targets.length === 0 && current.version !== null) return;
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
              if (this.tuners.get(key) === live) await this.applyCurrent(key);
            }).catch((error: unknown) => this.deps.log.error({ lbId: key, err: error }, "delayed trial push failed"));
          }, wait);
        }
        return;
      }
      live.lastTrialPushAt = this.now();
    }
    const { db, tables } = this.deps.store;
    const { loadBalancers } = tables;
    // Paper mode measures a candidate on the window after it went live; a version of its own (even
    // when the config did not change) keeps events routed before it from looking like its own.
    const measuring = current.role === "candidate" || current.role === "remeasure";
    let version: number | null = null;
    for (const target of targets) {
      await db.update(loadBalancers).set(target.set).where(eq(loadBalancers.id, target.lbId));
      version = (await this.deps.publisher.publish(target.lbId, { force: measuring, source: "tuner" })) ?? version;
    }
    if (targets.length === 0) {
      // Every row already carries the weights: the latest version (of a member, for the fleet) does too.
      const lbId = key === FLEET ? (await this.members())[0]?.id : key;
      if (lbId !== undefined) version = await this.deps.publisher.publish(lbId, { force: measuring, source: "tuner" });
    }
    // publish() binds through onNewVersion when it recorded a version; for unchanged weights and
    // trial the latest version already carries them.
    if (version !== null && live.tuner.current().version === null) live.tuner.bind(version);
    await this.persistOrAdopt(key, live);
  }

  /** The LB rows `current` is not on yet, with what to write to each: its LB's row, or for the
   * fleet's tuner every member's (and a non-member's stale trial, taken off). */
  private async targetsOf(key: TunerKey, current: ReturnType<EsTuner["current"]>) {
    const { db, tables } = this.deps.store;
    const { loadBalancers } = tables;
    const trialJson = current.trial === null ? null : JSON.stringify(current.trial);
    const rows = await db
      .select({
        id: loadBalancers.id,
        policy: loadBalancers.policy,
        weightRtt: loadBalancers.weightRtt,
        weightQueue: loadBalancers.weightQueue,
        trialJson: loadBalancers.trialJson,
      })
      .from(loadBalancers)
      .where(key === FLEET ? undefined : eq(loadBalancers.id, key));
    const targets: { lbId: string; set: { weightRtt?: number; weightQueue?: number; trialJson: string | null } }[] = [];
    for (const lb of rows) {
      if (key === FLEET && policyPause(lb.policy) !== null) {
        if (lb.trialJson !== null) targets.push({ lbId: lb.id, set: { trialJson: null } });
        continue;
      }
      if (!sameWeights({ rtt: lb.weightRtt, queue: lb.weightQueue }, current.weights) || lb.trialJson !== trialJson) {
        targets.push({ lbId: lb.id, set: { weightRtt: current.weights.rtt, weightQueue: current.weights.queue, trialJson } });
      }
    }
    return targets;
  }

  /** A new config version for the LB (a tuner push, a topology change, a 409 bump): if it carries the
   * tuner's weights and trial, the tuner is bound to it — and that is persisted, so a restart resumes.
   * A version this service published comes from inside one of its operations and is handled there;
   * any other one is queued behind the operations in progress. */
  private onNewVersion(lbId: string, version: number, config: LbConfig, source: PublishSource): Promise<void> {
    const handle = () => (this.tuners.has(FLEET) ? this.handleFleetVersion(version, config) : this.handleNewVersion(lbId, version, config));
    return source === "tuner" ? handle() : this.exclusive(handle);
  }

  private async handleNewVersion(lbId: string, version: number, config: LbConfig): Promise<void> {
    const live = this.tuners.get(lbId);
    if (!live) return;
    if (this.syncPause(lbId, live, policyPause(config.policy))) {
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

  /** A new config version of any LB while the fleet's tuner is on: an LB that joined the members (a
   * new one, or one whose policy now reads the weights) takes the fleet's weights and trial; the
   * fleet's tuner pauses when no LB's policy reads them, and resumes when one does again. */
  private async handleFleetVersion(version: number, config: LbConfig): Promise<void> {
    const live = this.tuners.get(FLEET)!;
    const members = await this.members();
    if (this.syncPause(FLEET, live, members.length > 0 ? null : NO_MEMBERS)) {
      await this.persistOrAdopt(FLEET, live);
      if (this.tuners.get(FLEET) === live) await this.applyCurrent(FLEET, true);
      return;
    }
    const current = live.tuner.current();
    const carries = sameWeights(current.weights, config.weights) && config.trial?.id === (current.trial ?? undefined)?.id;
    if (!carries) {
      await this.applyCurrent(FLEET);
      return;
    }
    if (current.version !== null) return;
    live.tuner.bind(version);
    await this.persistOrAdopt(FLEET, live);
  }

  /** One LB's finished request: a sample for that LB's tuner (for the fleet's, when the LB is a
   * member), a peer request for the others'. Queued: events are observed in the order they arrived. */
  observe(event: TelemetryEvent): Promise<TunerStep | null> {
    return this.exclusive(() => this.observeNow(event));
  }

  private async observeNow(event: TelemetryEvent): Promise<TunerStep | null> {
    // A leader whose lease ran out stops stepping at once, before its duties are stopped.
    const term = this.deps.leadership.currentTerm();
    if (term === null) return null;
    const fleet = this.tuners.get(FLEET);
    // While the fleet's tuner is on, the LBs' own tuners stand aside.
    const tuners: [TunerKey, LiveTuner][] = fleet ? [[FLEET, fleet]] : [...this.tuners];
    let step: TunerStep | null = null;
    for (const [key, live] of tuners) {
      if (!live.running) continue;
      const own = key === FLEET ? policyPause(event.policy) === null : key === event.lbId;
      if (!own) {
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
        this.deps.log.warn({ lbId: key, term, step: step.step }, "tuner run changed elsewhere or leadership lost; step not recorded");
        await this.reload(key);
        return null;
      }
      await this.applyCurrent(key);
    }
    return step;
  }

  // --- operator actions (audited by the service layer) ---------------------------------------

  startTuning(key: TunerKey): Promise<void> {
    return this.operatorAction(key, (live) => {
      guard(() => live.tuner.setMode("online"));
      live.running = true;
    });
  }

  stopTuning(key: TunerKey): Promise<void> {
    return this.operatorAction(key, (live) => {
      // Freeze the incumbent: a candidate or trial under measurement must not stay live.
      if (live.tuner.mode === "online") guard(() => live.tuner.setMode("static"));
      live.running = false;
    });
  }

  reset(key: TunerKey): Promise<void> {
    return this.exclusive(async () => {
      await this.requireOwnScope(key);
      const live = await this.fresh(key);
      live.pendingPush?.();
      const state = live.tuner.state();
      const created = await this.newRun(key, state.initial, live.settings, live.running);
      this.tuners.set(key, { ...live, runId: created.run.id, tuner: created.tuner, pendingPush: null, writtenAt: created.run.updatedAt });
      await this.applyCurrent(key, true);
    });
  }

  setManual(key: TunerKey, weights: Weights): Promise<void> {
    return this.operatorAction(key, (live) => {
      const [rlo, rhi] = live.settings.bounds.rtt;
      const [qlo, qhi] = live.settings.bounds.queue;
      if (weights.rtt < rlo || weights.rtt > rhi) throw invalid(`W_rtt ${weights.rtt} is outside the bounds [${rlo}, ${rhi}]`);
      if (weights.queue < qlo || weights.queue > qhi) throw invalid(`W_queue ${weights.queue} is outside the bounds [${qlo}, ${qhi}]`);
      guard(() => live.tuner.setManualWeights(weights));
      live.running = false;
    });
  }

  updateSettings(key: TunerKey, patch: TunerSettingsPatch): Promise<TunerSettings> {
    return this.operatorAction(key, (live) => {
      // Paper mode matches samples to one LB's config versions; the fleet's LBs number theirs apart.
      if (key === FLEET && (patch.evaluation ?? live.settings.evaluation) !== "ab") throw invalid("the fleet tuner runs A/B trials only (evaluation ab)");
      return applySettings(live, patch);
    });
  }

  /** The tuning scope as the database holds it: fleet while the fleet's run is open. */
  async scope(): Promise<TunerScope> {
    return (await this.currentRun(FLEET)) ? "fleet" : "lb";
  }

  /**
   * Switches the tuning scope. To fleet: stops the LBs' own tuners, opens the fleet's run (stopped, at
   * the weights every member already shares, or the defaults when they differ) and publishes it. To
   * per LB: ends the fleet's run and starts each LB's tuner afresh (stopped) from the weights the
   * fleet left on it, keeping that tuner's settings. Switching to the scope in force changes nothing.
   */
  setScope(scope: TunerScope): Promise<void> {
    return this.exclusive(async () => {
      const open = await this.currentRun(FLEET);
      if ((scope === "fleet") === Boolean(open)) return;
      const { db, tables } = this.deps.store;
      const lbs = await db.select().from(tables.loadBalancers);
      if (scope === "fleet") {
        // The LBs' own tuners stop: standing aside, they step nothing, and their pages say so.
        for (const lb of lbs) {
          const own = await this.fresh(lb.id);
          if (!own.running) continue;
          if (own.tuner.mode === "online") guard(() => own.tuner.setMode("static"));
          own.running = false;
          await this.persistOrAdopt(lb.id, own);
        }
        await this.newRun(FLEET, agreedWeights(await this.members()), null, false);
        await this.load(FLEET);
        await this.applyCurrent(FLEET, true);
        return;
      }
      this.tuners.get(FLEET)?.pendingPush?.();
      this.tuners.delete(FLEET);
      await endFleetRun(this.deps.store, this.now());
      for (const lb of lbs) {
        const own = await this.fresh(lb.id);
        own.pendingPush?.();
        const created = await this.newRun(lb.id, { rtt: lb.weightRtt, queue: lb.weightQueue }, own.settings, false);
        this.tuners.set(lb.id, { ...own, runId: created.run.id, tuner: created.tuner, running: false, pendingPush: null, writtenAt: created.run.updatedAt });
        await this.applyCurrent(lb.id, true);
      }
    });
  }

  describe(key: TunerKey) {
    return this.exclusive(async () => {
      const live = await this.load(key);
      return { ...(await describeTuner(this.deps.store, live)), scope: await this.scope() };
    });
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
