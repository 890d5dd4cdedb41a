// TunerService: one EsTuner per LB, or one for the whole fleet, fed by the TelemetryHub.
// - Scope (tuner-scope.ts): one tuner per LB, or the fleet's (key FLEET) for every LB whose policy
//   reads the weights, while the LBs' own tuners stand aside.
// - Samples: every LB's telemetry event goes to every tuner: its own LB's events (a member's, for the
//   fleet) are samples (the tuner's rule, sampleFromEvent: client errors and aborts are not), other
//   LBs' events that finished after the trial started count toward its fleet-share guardrail (observePeer).
// - A/B trials (the default): the tuner's current weights and trial are written to the LB row
//   (weight_*, trial_json) and published, so every config version — whatever triggered it — carries
//   the running trial; samples are matched to the trial by its id, not by config version. Trial pushes
//   to one LB are rate-limited (minTrialPushIntervalMs): a new trial due sooner waits.
// - The tuner's state is persisted to tuner_runs after every step, look (the α it spent) and operator
//   change, each step to tuner_steps, and every new config version that carries the tuner's weights
//   and trial rebinds and persists it, so a console restart resumes where it stopped. A tuner restored
//   by start() starts its trial's samples afresh: the TelemetryHub's replay of the LB's buffer refills
//   them, so no event counts twice. A reload (nothing replays) keeps them (tuner-live.ts, restoreRun).
// - Paused while the LB's policy ignores the weights (routing's Policy.usesCostWeights): no trial, the
//   incumbent live. Every new config version re-checks the policy.
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
import type { Logger } from "pino";
import { sameWeights, type TunerStep, type Weights } from "@meridian/tuner";
import type { LbConfig, TelemetryEvent } from "@meridian/protocol";
import type { Store, TunerRunRow } from "@meridian/db";
import { conflict, invalid } from "../errors";
import type { ConfigPublisher, PublishSource } from "./config-publisher";
import type { TelemetryHub } from "./telemetry-hub";
import { applySettings, cancelPendingPush, feed, freeze, type LiveTuner, liveTuner, restoreRun, seedFor, setManual, startOnline } from "./tuner-live";
import { SerialQueue } from "./serial-queue";
import { defaultTimer, paceTrialPush, pushRows, staleRows } from "./tuner-push";
import type { TunerSettings, TunerSettingsPatch } from "./tuner-settings";
import { currentRun, endFleetRun, lastSettings, newRun, persistRun, RunMoved, sameRevision } from "./tuner-runs";
import {
  agreedWeights,
  FLEET,
  fleetMembers,
  lbIdOf,
  NO_MEMBERS,
  nameOf,
  policyPause,
  requireOwnScope,
  scopeOf,
  startOf,
  type TunerKey,
  type TunerScope,
} from "./tuner-scope";
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

/** How many times an operator's change is made on a run that another console wrote meanwhile. */
const OPERATOR_ATTEMPTS = 3;

export class TunerService {
  private readonly tuners = new Map<string, LiveTuner>();
  private subscribed = false;
  private readonly now: () => number;
  private readonly setTimer: (fn: () => void, ms: number) => () => void;
  private readonly minTrialPushIntervalMs: number;
  /** Every operation, one at a time in arrival order (header: "Every operation"). */
  private readonly ops = new SerialQueue();
  constructor(private readonly deps: TunerServiceDeps) {
    this.now = deps.now ?? Date.now;
    this.setTimer = deps.setTimer ?? defaultTimer;
    this.minTrialPushIntervalMs = deps.minTrialPushIntervalMs ?? MIN_TRIAL_PUSH_INTERVAL_MS;
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    return this.ops.run(work);
  }

  /** Resolves once every operation queued so far (events included) has finished. */
  idle(): Promise<void> {
    return this.ops.idle();
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
      this.stop();
      const { db, tables } = this.deps.store;
      // The TelemetryHub subscribes from every LB's start again: the replay refills the trials.
      const replayed = { replayed: true };
      for (const lb of await db.select({ id: tables.loadBalancers.id }).from(tables.loadBalancers)) await this.load(lb.id, replayed);
      if (await this.currentRun(FLEET)) await this.load(FLEET, replayed);
      // Publish whatever the tuners want live (a restored trial whose version the LB never took).
      for (const key of [...this.tuners.keys()]) await this.applyCurrent(key);
    });
  }

  stop(): void {
    for (const live of this.tuners.values()) cancelPendingPush(live);
    this.tuners.clear();
  }

  forget(lbId: string): void {
    cancelPendingPush(this.tuners.get(lbId));
    this.tuners.delete(lbId);
  }

  /** The LB's live tuner, created (or restored from its current run) on first use. */
  ensure(lbId: string): Promise<LiveTuner> {
    return this.exclusive(() => this.load(lbId));
  }

  /** The tuner as its run stores it (restoreRun: whether a replay refills its trial, or a copy in memory measured it). */
  private async load(key: TunerKey, how: Parameters<typeof restoreRun>[1] = {}): Promise<LiveTuner> {
    const existing = this.tuners.get(key);
    // A follower's copy would go stale as the leader steps: it reads the run again every time.
    if (existing && this.deps.leadership.currentTerm() !== null) return existing;
    const { start, pause } = await startOf(this.deps.store, key);
    let run = await this.currentRun(key);
    let restored: ReturnType<typeof restoreRun> | null = null;
    if (run?.stateJson) {
      try {
        restored = restoreRun({ ...run, stateJson: run.stateJson }, how);
      } catch (error) {
        this.deps.log.error({ lbId: key, err: error }, "stored tuner state unreadable; starting a new run");
        run = undefined;
      }
    }
    if (!run || !restored) {
      const created = await this.newRun(key, start, null, false);
      [run, restored] = [created.run, created];
    }
    const live = liveTuner(run, restored, this.now());
    this.tuners.set(key, live);
    if (this.syncPause(key, live, pause)) {
      try {
        // Fenced by the revision alone (term 0): the run just read plus the pause its LB's policy
        // dictates, as any leader writes it; fenced by the lease, a deposed leader would retry forever.
        await this.persist(live, null, 0);
      } catch (error) {
        if (!(error instanceof RunMoved)) throw error;
        // Another console wrote the run between the read above and this write: read it again.
        this.tuners.delete(key);
        return this.load(key, how);
      }
    }
    return live;
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

  private newRun(key: TunerKey, weights: Weights, settings: TunerSettings | null, running: boolean, pause: string | null = null) {
    return newRun(this.deps.store, { lbId: lbIdOf(key), weights, settings, running, pause, seed: (runId) => seedFor(key, runId) }, this.now());
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
    const leading = this.deps.leadership.currentTerm() !== null;
    if (live && leading && !sameRevision(await this.currentRun(key), live)) this.tuners.delete(key);
    // The leader's copy measured its trial since the run was written: a reload keeps that.
    return this.load(key, leading ? { previous: live } : {});
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
      await requireOwnScope(this.deps.store, key);
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
      // An LB's tuner that a failed write dropped and the database could not give back then.
      const { db, tables } = this.deps.store;
      for (const lb of await db.select({ id: tables.loadBalancers.id }).from(tables.loadBalancers)) {
        if (!this.tuners.has(lb.id)) await this.reload(lb.id);
      }
      // A follower switched the scope to fleet: its run is open and not here yet.
      if (!this.tuners.has(FLEET) && fleetRun) await this.reload(FLEET);
      // Whatever loaded the fleet's tuner here (a page's describe() reads it too), its weights and
      // trial reach every member: a no-op when they already have them.
      else if (this.tuners.has(FLEET)) await this.applyCurrent(FLEET);
    });
  }

  private async reload(key: TunerKey): Promise<void> {
    const previous = this.tuners.get(key);
    cancelPendingPush(previous);
    this.tuners.delete(key);
    if (this.deps.leadership.currentTerm() === null) return;
    try {
      await this.load(key, { previous });
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
    const targets = await staleRows(this.deps.store, key, current);
    // The fleet's tuner may be bound and still owe a new member its weights.
    if (key === FLEET && targets.length === 0 && current.version !== null) return;
    if (operator) cancelPendingPush(live);
    const retry = () =>
      this.exclusive(async () => {
        if (this.tuners.get(key) === live) await this.applyCurrent(key);
      }).catch((error: unknown) => this.deps.log.error({ lbId: key, err: error }, "delayed trial push failed"));
    const clock = { now: this.now, setTimer: this.setTimer };
    if (current.trial !== null && !paceTrialPush(live, clock, this.minTrialPushIntervalMs, operator, retry)) return;
    const version = await pushRows(this.deps.store, this.deps.publisher, key, current, targets);
    // publish() binds through onNewVersion when it recorded a version; for unchanged weights and
    // trial the latest version already carries them.
    if (version !== null && live.tuner.current().version === null) live.tuner.bind(version);
    await this.persistOrAdopt(key, live);
  }

  /** A new config version for the LB (a tuner push, a topology change, a 409 bump): if it carries the
   * tuner's weights and trial, the tuner is bound to it — and that is persisted, so a restart resumes.
   * A version this service published comes from inside one of its operations and is handled there;
   * any other one is queued behind the operations in progress. */
  private onNewVersion(lbId: string, version: number, config: LbConfig, source: PublishSource): Promise<void> {
    // While the fleet's tuner is on, every LB's version is its business.
    const handle = () => this.handleNewVersion(this.tuners.has(FLEET) ? FLEET : lbId, version, config);
    return source === "tuner" ? handle() : this.exclusive(handle);
  }

  /** The fleet's tuner pauses while no LB's policy reads the weights, an LB's while its own does not;
   * an LB that joins the fleet's members (a new one, or one now on such a policy) takes its weights. */
  private async handleNewVersion(key: TunerKey, version: number, config: LbConfig): Promise<void> {
    const live = this.tuners.get(key);
    if (!live) return;
    const pause = key === FLEET ? ((await fleetMembers(this.deps.store)).length > 0 ? null : NO_MEMBERS) : policyPause(config.policy);
    if (this.syncPause(key, live, pause)) {
      // A pause must take the trial off the LBs now; a resume starts the next trial at once.
      await this.persistOrAdopt(key, live);
      if (this.tuners.get(key) === live) await this.applyCurrent(key, true);
      return;
    }
    // A non-member's version (its policy ignores the weights) binds nothing; a trial it carries comes off now.
    if (key === FLEET && policyPause(config.policy) !== null) {
      if (config.trial !== undefined) await this.applyCurrent(FLEET, true);
      return;
    }
    const current = live.tuner.current();
    if (!sameWeights(current.weights, config.weights) || config.trial?.id !== current.trial?.id) {
      if (key === FLEET) await this.applyCurrent(FLEET);
      return;
    }
    if (current.version === version) return;
    live.tuner.bind(version);
    await this.persistOrAdopt(key, live);
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
      const fed = feed(live, event, key === FLEET ? policyPause(event.policy) === null : key === event.lbId, this.now());
      // A look that decided nothing still spent α: recorded, so a restart's replay cannot spend it again.
      if (fed.looked) await this.record(key, live, null, term);
      if (!fed.step) continue;
      step = fed.step;
      if (step.converged && live.settings.evaluation === "paper") live.running = false;
      if (!(await this.record(key, live, step, term))) return null;
      await this.applyCurrent(key);
    }
    return step;
  }

  /** Records a step, or an undecided look (`step` null); false when it was not recorded. */
  private async record(key: TunerKey, live: LiveTuner, step: TunerStep | null, term: number): Promise<boolean> {
    try {
      await this.persist(live, step, term);
      return true;
    } catch (error) {
      const moved = error instanceof RunMoved;
      // The lease moved on, or another console changed this run: nothing is recorded. Or the
      // database refused the write (locked, connection lost): after a step, the copy here has moved
      // on to a trial that the database does not hold and no LB runs, whose samples would never
      // come: it is dropped, and the run as stored (its trial still live on the LBs) goes on. After
      // a look it is still that trial: the next look records what this one spent.
      this.deps.log[moved ? "warn" : "error"]({ lbId: key, term, step: step?.step ?? null, err: error }, `tuner ${step ? "step" : "look"} not recorded`);
      if (!moved && step === null) return false;
      // Reloaded now when this console still leads; a reload that fails too is made by reconcile.
      await this.reload(key);
      return false;
    }
  }

  // --- operator actions (audited by the service layer) ---------------------------------------

  startTuning(key: TunerKey): Promise<void> {
    return this.operatorAction(key, startOnline);
  }

  stopTuning(key: TunerKey): Promise<void> {
    return this.operatorAction(key, freeze);
  }

  reset(key: TunerKey): Promise<void> {
    return this.exclusive(async () => {
      await requireOwnScope(this.deps.store, key);
      const live = await this.fresh(key);
      await this.restart(key, live, live.tuner.state().initial, live.running);
    });
  }

  /** Ends the run `live` holds and starts a fresh one from `start`, with its settings (paused, as
   * load() would pause it, while the policy ignores the weights); publishes it. */
  private async restart(key: TunerKey, live: LiveTuner, start: Weights, running: boolean): Promise<void> {
    cancelPendingPush(live);
    const created = await this.newRun(key, start, live.settings, running, (await startOf(this.deps.store, key)).pause);
    this.tuners.set(key, liveTuner(created.run, created, this.now()));
    await this.applyCurrent(key, true);
  }

  setManual(key: TunerKey, weights: Weights): Promise<void> {
    return this.operatorAction(key, (live) => setManual(live, weights));
  }

  updateSettings(key: TunerKey, patch: TunerSettingsPatch): Promise<TunerSettings> {
    return this.operatorAction(key, (live) => {
      // Paper mode matches samples to one LB's config versions; the fleet's LBs number theirs apart.
      if (key === FLEET && (patch.evaluation ?? live.settings.evaluation) !== "ab") throw invalid("the fleet tuner runs A/B trials only (evaluation ab)");
      return applySettings(live, patch);
    });
  }

  /** The tuning scope as the database holds it. */
  scope(): Promise<TunerScope> {
    return scopeOf(this.deps.store);
  }

  /**
   * Switches the tuning scope. To fleet: stops the LBs' own tuners, opens the fleet's run (stopped, at
   * the weights every member already shares, or the defaults when they differ, with the settings of
   * the last fleet run) and publishes it. To per LB: ends the fleet's run and starts each LB's tuner
   * afresh (stopped) from the weights the fleet left on it, keeping that tuner's settings. Switching
   * to the scope in force changes nothing.
   */
  setScope(scope: TunerScope): Promise<void> {
    return this.exclusive(async () => {
      if ((await scopeOf(this.deps.store)) === scope) return;
      const { db, tables } = this.deps.store;
      const lbs = await db.select().from(tables.loadBalancers);
      if (scope === "fleet") {
        // The LBs' own tuners stop: standing aside, they step nothing, and their pages say so.
        for (const lb of lbs) {
          const own = await this.fresh(lb.id);
          if (!own.running) continue;
          freeze(own);
          await this.persistOrAdopt(lb.id, own);
        }
        await this.newRun(FLEET, agreedWeights(await fleetMembers(this.deps.store)), await lastSettings(this.deps.store, null), false);
        await this.load(FLEET);
        await this.applyCurrent(FLEET, true);
        return;
      }
      cancelPendingPush(this.tuners.get(FLEET));
      this.tuners.delete(FLEET);
      await endFleetRun(this.deps.store, this.now());
      for (const lb of lbs) await this.restart(lb.id, await this.fresh(lb.id), { rtt: lb.weightRtt, queue: lb.weightQueue }, false);
    });
  }

  describe(key: TunerKey) {
    return this.exclusive(async () => {
      const live = await this.load(key);
      return { ...(await describeTuner(this.deps.store, live)), scope: await scopeOf(this.deps.store) };
    });
  }
}
