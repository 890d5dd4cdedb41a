// TunerService: the operator's actions on a tuner (start, stop, reset, manual weights, settings) and on
// the tuning scope, over TunerEngine (tuner-engine.ts: loading, recording, publishing, stepping).
// - Each action takes the audit step of the service that asks for it (services/tuner.ts) and runs it
//   in the transaction that saves the change, with the tuner's settings before and after the change
//   (the "after" read off the changed tuner before the write): the change and its audit row are saved
//   together or not at all. Written after the commit, a failed audit row left a change no one could
//   find in the audit log.
// - A change that was not saved (refused, or its write or audit row failed) leaves nothing in memory
//   either: the copy here is put back as it was (undoOf). Kept, the leader's next write of the run (a
//   step, a bound version) would have saved it, with no audit row.
import "server-only";
import { EsTuner, type Weights } from "@meridian/tuner";
import type { Queryable } from "@meridian/db";
import { conflict, invalid } from "../errors";
import { TunerEngine } from "./tuner-engine";
import { applySettings, cancelPendingPush, freeze, type LiveTuner, liveTuner, setManual, startOnline } from "./tuner-live";
import { endFleetRun, type InTransaction, lastSettings, type NewRun, sameRevision } from "./tuner-runs";
import { agreedWeights, FLEET, fleetMembers, nameOf, requireOwnScope, scopeOf, startOf, type TunerKey, type TunerScope } from "./tuner-scope";
import { settingsOf, type TunerSettings, type TunerSettingsPatch } from "./tuner-settings";
import { describeTuner, type TunerViewSource } from "./tuner-view";

export type { TunerSettings, TunerSettingsPatch } from "./tuner-settings";

/** How many times an operator's change is made on a run that another console wrote meanwhile. */
const OPERATOR_ATTEMPTS = 3;

/** Writes an operator's action to the audit log, given the state before and after it; run inside the
 * transaction that saves the change. */
export type AuditStep<S> = (tx: Queryable, before: S, after: S) => Promise<void>;

/** What an audit row records of a tuner: its settings and where it stands, as its page shows them. */
export type TunerSnapshot = Awaited<ReturnType<typeof snapshotOf>>;

async function snapshotOf(q: Queryable, live: TunerViewSource) {
  const d = await describeTuner(q, live);
  return {
    mode: d.mode,
    running: d.running,
    weights: d.weights,
    bounds: d.bounds,
    window: d.window,
    hop: d.hop,
    evaluation: d.evaluation,
    trial: d.trialSettings,
    guardrails: d.guardrails,
  };
}

/** Puts `live` back as it is now (what an operator's change edits: its tuner, whether it runs, its
 * settings, its trial's start), for a change that was not saved. The same object: a push it waits
 * for stays its own. */
function undoOf(live: LiveTuner): () => void {
  const state = live.tuner.state();
  const { running, settings, trialStart } = live;
  return () => Object.assign(live, { tuner: EsTuner.restore(state), running, settings, trialStart });
}

/** The tuner of a run newRun just made, as load() would hold it. */
function viewOf(created: NewRun): TunerViewSource {
  return { runId: created.run.id, tuner: created.tuner, running: created.run.running, settings: settingsOf(created.tuner.state().config) };
}

export class TunerService extends TunerEngine {
  /** Before an operator's action on the leader: the run as the database holds it now (a follower
   * may have changed it since this console last read it). */
  protected async fresh(key: TunerKey): Promise<LiveTuner> {
    const live = this.tuners.get(key);
    const leading = this.deps.leadership.currentTerm() !== null;
    if (live && leading && !sameRevision(await this.currentRun(key), live)) this.tuners.delete(key);
    // The leader's copy measured its trial since the run was written: a reload keeps that.
    return this.load(key, leading ? { previous: live } : {});
  }

  /**
   * Every operator action, one way: under the lock, on the run as stored now (fresh), `change`
   * edits the live tuner; the result is recorded (with its audit row) and pushed. When another
   * console wrote the run in the moment between reading and writing (on a follower, most often the
   * leader recording a step or binding a version), the change is made again on the run as it now
   * stands: it is the operator's intent (stop, these weights), not a copy of the state they saw. A
   * run that keeps moving is refused (409) rather than overwritten.
   */
  private operatorAction<T>(key: TunerKey, change: (live: LiveTuner) => T, audit?: AuditStep<TunerSnapshot>): Promise<T> {
    return this.exclusive(async () => {
      await requireOwnScope(this.deps.store, key);
      for (let attempt = 1; attempt <= OPERATOR_ATTEMPTS; attempt++) {
        const live = await this.fresh(key);
        const undo = undoOf(live);
        const before = audit ? await snapshotOf(this.deps.store, live) : null;
        let result: T;
        let saved: boolean;
        try {
          result = change(live);
          const after = audit ? await snapshotOf(this.deps.store, live) : null;
          const recorded: InTransaction | undefined = audit && before && after ? (tx) => audit(tx, before, after) : undefined;
          saved = await this.persistUnlessMoved(key, live, recorded);
        } catch (error) {
          undo();
          throw error;
        }
        if (saved) {
          await this.applyCurrent(key, true);
          return result;
        }
      }
      throw conflict(
        `the tuner of ${nameOf(key)} was changed on another console at the same moment, ${OPERATOR_ATTEMPTS} times; it shows that change now: retry if yours still applies`,
      );
    });
  }

  startTuning(key: TunerKey, audit?: AuditStep<TunerSnapshot>): Promise<void> {
    return this.operatorAction(key, startOnline, audit);
  }

  stopTuning(key: TunerKey, audit?: AuditStep<TunerSnapshot>): Promise<void> {
    return this.operatorAction(key, freeze, audit);
  }

  reset(key: TunerKey, audit?: AuditStep<TunerSnapshot>): Promise<void> {
    return this.exclusive(async () => {
      await requireOwnScope(this.deps.store, key);
      const live = await this.fresh(key);
      const before = audit ? await snapshotOf(this.deps.store, live) : null;
      // The new run's tuner exists only inside newRun's transaction (its seed is the run's id): its
      // snapshot is taken there, before the row is written.
      const recorded: InTransaction<[NewRun]> | undefined =
        audit && before ? async (tx, created) => await audit(tx, before, await snapshotOf(tx, viewOf(created))) : undefined;
      await this.restart(key, live, live.tuner.state().initial, live.running, recorded);
    });
  }

  /** Ends the run `live` holds and starts a fresh one from `start`, with its settings (paused, as
   * load() would pause it, while the policy ignores the weights; `inTx` in its transaction); publishes it. */
  private async restart(key: TunerKey, live: LiveTuner, start: Weights, running: boolean, inTx?: InTransaction<[NewRun]>): Promise<void> {
    const created = await this.newRun(key, start, live.settings, running, (await startOf(this.deps.store, key)).pause, inTx);
    // Once the new run is saved: a restart that failed leaves the tuner, and a push it waits for, as they were.
    cancelPendingPush(live);
    this.tuners.set(key, liveTuner(created.run, created, this.now()));
    await this.applyCurrent(key, true);
  }

  setManual(key: TunerKey, weights: Weights, audit?: AuditStep<TunerSnapshot>): Promise<void> {
    return this.operatorAction(key, (live) => setManual(live, weights), audit);
  }

  updateSettings(key: TunerKey, patch: TunerSettingsPatch, audit?: AuditStep<TunerSnapshot>): Promise<TunerSettings> {
    return this.operatorAction(
      key,
      (live) => {
        // Paper mode matches samples to one LB's config versions; the fleet's LBs number theirs apart.
        if (key === FLEET && (patch.evaluation ?? live.settings.evaluation) !== "ab") throw invalid("the fleet tuner runs A/B trials only (evaluation ab)");
        return applySettings(live, patch);
      },
      audit,
    );
  }

  /** The tuning scope as the database holds it. */
  scope(): Promise<TunerScope> {
    return scopeOf(this.deps.store);
  }

  /**
   * Switches the tuning scope. To fleet: opens the fleet's run (stopped, at the weights every member
   * already shares, or the defaults when they differ, with the settings of the last fleet run), stops
   * the LBs' own tuners and publishes it. To per LB: ends the fleet's run and starts each LB's tuner
   * afresh (stopped) from the weights the fleet left on it, keeping that tuner's settings. Switching
   * to the scope in force changes nothing.
   * The scope is whether the fleet's run is open (scopeOf), so the transaction that opens or ends it
   * is the change the operator asked for, and `audit` runs in it. It comes first: what follows (the
   * LBs' tuners stopped, or started afresh) is its consequence, each write of its own; one that fails
   * leaves the switch saved and recorded (services/tuner.ts answers "may be saved"). Made first, the
   * LBs' tuners were stopped by a switch whose own write then failed: a change with no audit row.
   */
  setScope(scope: TunerScope, audit?: AuditStep<{ scope: TunerScope }>): Promise<void> {
    return this.exclusive(async () => {
      const before = await scopeOf(this.deps.store);
      if (before === scope) return;
      const recorded: InTransaction | undefined = audit ? (tx) => audit(tx, { scope: before }, { scope }) : undefined;
      const { db, tables } = this.deps.store;
      const lbs = await db.select().from(tables.loadBalancers);
      if (scope === "fleet") {
        await this.newRun(FLEET, agreedWeights(await fleetMembers(this.deps.store)), await lastSettings(this.deps.store, null), false, null, recorded);
        await this.load(FLEET);
        // The LBs' own tuners stop: standing aside (the fleet's is loaded), they step and publish
        // nothing, and their pages say so.
        for (const lb of lbs) {
          const own = await this.fresh(lb.id);
          if (!own.running) continue;
          freeze(own);
          await this.persistOrAdopt(lb.id, own);
        }
        await this.applyCurrent(FLEET, true);
        return;
      }
      // Ended before the copy here goes: a failed end leaves the fleet's tuner on, here as stored.
      await endFleetRun(this.deps.store, this.now(), recorded);
      cancelPendingPush(this.tuners.get(FLEET));
      this.tuners.delete(FLEET);
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
