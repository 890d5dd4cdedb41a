// TunerEngine: one EsTuner per LB, or one for the whole fleet, fed by the TelemetryHub; the operator's
// actions on them are TunerService's (tuner-service.ts), which extends it.
// - Scope (tuner-scope.ts): one tuner per LB, or the fleet's (key FLEET) for every LB whose policy
//   reads the weights, while the LBs' own tuners stand aside.
// - Samples: every LB's telemetry event goes to every tuner: its own LB's events (a member's, for the
//   fleet) are samples (the tuner's rules: sampleFromEvent, client errors and aborts are not; eventRole,
//   the fleet's tuner takes a forwarded request once, at its entry LB), other LBs' events that
//   finished after the trial started count toward its fleet-share guardrail (observePeer).
// - A/B trials (the default): the tuner's current weights and trial are written to the LB row
//   (weight_*, trial_json) and published, so every config version — whatever triggered it — carries
//   the running trial; samples are matched to the trial by its id, not by config version. Trial pushes
//   to one LB are rate-limited (minTrialPushIntervalMs): a new trial due sooner waits.
// - The tuner's state is persisted to tuner_runs after every step, look (the α it spent) and operator
//   change, each step to tuner_steps, and every new config version that carries the tuner's weights
//   and trial rebinds and persists it, so a console restart resumes where it stopped. A tuner restored
//   by start() starts its trial's samples afresh: the TelemetryHub's replay of the LB's buffer
//   refills them (matched by trial id), so no event counts twice. A reload keeps the samples the run
//   stored, or those of the copy in memory when it measured more, or always while a replay still
//   refills that copy (tuner-live.ts, restoreRun). Paper mode, kept to reproduce GORGO, has a known
//   limit here: its window, also refilled by the replay, matches samples to no trial, so the replay
//   brings back requests of windows already scored, and a step after a restart can score them again.
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
import type { ConfigPublisher, PublishSource } from "./config-publisher";
import type { TelemetryHub } from "./telemetry-hub";
import { cancelPendingPush, feed, type LiveTuner, liveTuner, restoreRun, seedFor } from "./tuner-live";
import { SerialQueue } from "./serial-queue";
import { defaultTimer, paceTrialPush, pushRows, staleRows } from "./tuner-push";
import type { TunerSettings } from "./tuner-settings";
import { currentRun, type InTransaction, type NewRun, newRun, persistRun, RunMoved, sameRevision } from "./tuner-runs";
import { FLEET, fleetHoldsEntry, fleetMembers, lbIdOf, NO_MEMBERS, policyPause, startOf, type TunerKey } from "./tuner-scope";

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

export class TunerEngine {
  protected readonly tuners = new Map<string, LiveTuner>();
  private subscribed = false;
  protected readonly now: () => number;
  private readonly setTimer: (fn: () => void, ms: number) => () => void;
  private readonly minTrialPushIntervalMs: number;
  /** Every operation, one at a time in arrival order (header: "Every operation"). */
  private readonly ops = new SerialQueue();
  constructor(protected readonly deps: TunerServiceDeps) {
    this.now = deps.now ?? Date.now;
    this.setTimer = deps.setTimer ?? defaultTimer;
    this.minTrialPushIntervalMs = deps.minTrialPushIntervalMs ?? MIN_TRIAL_PUSH_INTERVAL_MS;
  }

  protected exclusive<T>(work: () => Promise<T>): Promise<T> {
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
  protected async load(key: TunerKey, how: Parameters<typeof restoreRun>[1] = {}): Promise<LiveTuner> {
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
    if (this.syncPause(key, live, pause)) return await this.persistPause(key, live, how);
    return live;
  }

  /** Writes the pause load() just took, as the leader writes everything: fenced by its term and the
   * run's revision. A follower writes nothing (its copy is read again each time; the leader's load
   * or new config version writes the pause, an operator's change written here carries it). A leader
   * the lease fenced off writes nothing and does not retry: it is deposed, its duties stop. */
  private async persistPause(key: TunerKey, live: LiveTuner, how: Parameters<typeof restoreRun>[1]): Promise<LiveTuner> {
    const term = this.deps.leadership.currentTerm();
    if (term === null) return live;
    try {
      await this.persist(live, null, term);
    } catch (error) {
      if (!(error instanceof RunMoved)) throw error;
      if (await this.leaseLost(key, live, "a tuner's pause")) return live;
      // Another console wrote the run between load()'s read and this write: read it again.
      this.tuners.delete(key);
      return this.load(key, how);
    }
    return live;
  }

  /** Pauses the tuner while its LB's policy ignores the weights (the fleet's: while no LB's reads
   * them), resumes it when they are read again. `reason` is why it should be paused, or null. True when that changed anything. */
  protected syncPause(key: TunerKey, live: LiveTuner, reason: string | null): boolean {
    if (reason === live.tuner.pausedReason) return false;
    if (reason === null) live.tuner.resume();
    else live.tuner.pause(reason);
    this.deps.log.info({ lbId: key, paused: reason }, reason === null ? "tuner resumed" : "tuner paused");
    return true;
  }

  protected currentRun(key: TunerKey): Promise<TunerRunRow | undefined> {
    return currentRun(this.deps.store, lbIdOf(key));
  }

  protected newRun(
    key: TunerKey,
    weights: Weights,
    settings: TunerSettings | null,
    running: boolean,
    pause: string | null = null,
    inTx?: InTransaction<[NewRun]>,
  ) {
    return newRun(this.deps.store, { lbId: lbIdOf(key), weights, settings, running, pause, seed: (runId) => seedFor(key, runId) }, this.now(), inTx);
  }

  /** Records the state (and the step); see persistRun for the fencing. While this console leads,
   * every write is fenced by its term and by the run's revision, not only a step's: an unfenced
   * write of the leader's copy (binding a version, say) would silently undo an operator's change
   * that a follower wrote meanwhile. A follower's writes (operators' changes) are fenced by the
   * revision alone: one that lost a race to the leader's step is refused, not written over it. */
  protected async persist(live: LiveTuner, step: TunerStep | null, term = this.deps.leadership.currentTerm() ?? 0, inTx?: InTransaction): Promise<void> {
    live.writtenAt = await persistRun(this.deps.store, live, step, term, this.now(), inTx);
  }

  /** Records the state (and runs `inTx` in that transaction); when another console wrote the run since
   * this one read it, that write wins: the run is reloaded from the database instead, and this returns false. */
  protected async persistUnlessMoved(key: TunerKey, live: LiveTuner, inTx?: InTransaction): Promise<boolean> {
    try {
      await this.persist(live, null, undefined, inTx);
      return true;
    } catch (error) {
      if (!(error instanceof RunMoved)) throw error;
      if (!(await this.leaseLost(key, live, "a tuner's state"))) await this.reload(key);
      return false;
    }
  }

  /** Whether a refused write was refused by the lease, not by another console's write: the run is
   * still as this console read it, so its term no longer leads. Then nothing is reloaded: a reload
   * publishes and writes again, and each write refused the same way reloaded again, in a loop that
   * held the serial queue until this console noticed it had stopped leading. */
  private async leaseLost(key: TunerKey, live: LiveTuner, what: string): Promise<boolean> {
    if (!sameRevision(await this.currentRun(key), live)) return false;
    this.deps.log.warn({ lbId: key }, `leadership lost while recording ${what}; nothing recorded`);
    return true;
  }

  /** The leader's own bookkeeping write (binding a version, a pause): a change from another console wins. */
  protected async persistOrAdopt(key: TunerKey, live: LiveTuner): Promise<void> {
    if (!(await this.persistUnlessMoved(key, live))) this.deps.log.info({ lbId: key }, "tuner run changed on another console; adopted that change");
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
        if (sameRevision(run, live)) await this.publishUnbound(key);
        else await this.reload(key);
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

  /** A tuner whose weights no config version carries yet (an operator's change saved, then its
   * publish failed: the answer said "may be saved"): published again by this round, not left until
   * the tuner's next change. A no-op for a bound tuner. One that fails again is tried next round. */
  private async publishUnbound(key: TunerKey): Promise<void> {
    try {
      await this.applyCurrent(key);
    } catch (error) {
      this.deps.log.warn({ lbId: key, err: error }, "tuner's weights not published; retrying next round");
    }
  }

  protected async reload(key: TunerKey): Promise<void> {
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
  protected async applyCurrent(key: TunerKey, operator = false): Promise<void> {
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
      const own = key === FLEET ? policyPause(event.policy) === null : key === event.lbId;
      const fed = feed(live, event, { own, holdsEntry: fleetHoldsEntry }, this.now());
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
}
