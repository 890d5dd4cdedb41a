// The tuner's rows: an LB's current run (tuner_runs) or the fleet's (lb_id null), a fresh run, the end
// of the fleet's, and the write that records a step with the state that follows it. TunerService (tuner-engine.ts, tuner-service.ts) decides when; this module
// holds how, on either store. tuner_runs.updated_at is the run's revision: every write moves it
// strictly forward, so a fenced write can tell that another console wrote the run since it read it.
// The writes an operator makes take `inTx`, a step of the caller's (the action's audit row) run in
// the write's own transaction: the change and its record are saved together or not at all.
import "server-only";
import { and, desc, eq, isNull, sql } from "drizzle-orm";
import { WEIGHT_BOUNDS } from "@meridian/routing/types";
import { EsTuner, type TunerStep, type Weights } from "@meridian/tuner";
import { largerOf, type Queryable, type Store, type TunerRunRow } from "@meridian/db";
import { whileLeading } from "../leadership/fence";
import { restoredTuner, stampTrial, storedStateJson, type TrialStart } from "./tuner-live";
import { configPatch, guard, settingsOf, type TunerSettings } from "./tuner-settings";

/** The step's run changed underneath (or the lease moved on): the step's transaction is rolled back. */
export class RunMoved extends Error {}

/** What persistRun writes: a live tuner and the revision of its run as this console last saw it. */
export interface PersistedTuner {
  runId: number;
  tuner: EsTuner;
  running: boolean;
  settings: TunerSettings;
  writtenAt: number;
  /** When its trial started (stored beside the state; stampTrial). */
  trialStart?: TrialStart | null;
}

/** Whether `run` (the LB's open run as the database holds it now) is still the run, at the revision,
 * that `live` last read or wrote; otherwise another console (or a reset) changed it since. */
export function sameRevision(run: TunerRunRow | undefined, live: Pick<PersistedTuner, "runId" | "writtenAt">): boolean {
  return run?.id === live.runId && run.updatedAt === live.writtenAt;
}

/** The runs of one LB, or the fleet's runs (`lbId` null). */
function runsOf(tunerRuns: Queryable["tables"]["tunerRuns"], lbId: string | null) {
  return lbId === null ? isNull(tunerRuns.lbId) : eq(tunerRuns.lbId, lbId);
}

/** The LB's open run (the newest one not ended), or the fleet's when `lbId` is null, if any. */
export async function currentRun({ db, tables }: Queryable, lbId: string | null): Promise<TunerRunRow | undefined> {
  const { tunerRuns } = tables;
  const [run] = await db
    .select()
    .from(tunerRuns)
    .where(and(runsOf(tunerRuns, lbId), isNull(tunerRuns.endedAt)))
    .orderBy(desc(tunerRuns.id))
    .limit(1);
  return run;
}

/** The settings of the LB's newest run, ended or not (the fleet's for `lbId` null), read from its
 * state as a restore reads them, or null when it has none: a fleet tuner opened again by a switch of
 * scope keeps the settings the operator gave the last one, as an LB's tuner keeps its own through a
 * reset. An unreadable state gives null (the defaults), as it starts a new run in TunerService.load. */
export async function lastSettings({ db, tables }: Queryable, lbId: string | null): Promise<TunerSettings | null> {
  const { tunerRuns } = tables;
  const [run] = await db.select({ stateJson: tunerRuns.stateJson }).from(tunerRuns).where(runsOf(tunerRuns, lbId)).orderBy(desc(tunerRuns.id)).limit(1);
  if (!run?.stateJson) return null;
  try {
    return settingsOf(restoredTuner(run.stateJson).state().config);
  } catch {
    return null;
  }
}

/** Ends the LB's open run (the fleet's for `lbId` null). Its revision moves, so a leader still
 * stepping it records nothing more (RunMoved) and reloads. */
async function endRun({ db, tables }: Queryable, lbId: string | null, now: number): Promise<void> {
  const { tunerRuns } = tables;
  await db
    .update(tunerRuns)
    .set({ endedAt: now, running: false, updatedAt: largerOf(sql`${tunerRuns.updatedAt} + 1`, now) })
    .where(and(runsOf(tunerRuns, lbId), isNull(tunerRuns.endedAt)));
}

/** A step of the caller's, run in the transaction of the write it goes with (an operator's audit row). */
export type InTransaction<A extends unknown[] = []> = (tx: Queryable, ...args: A) => Promise<void>;

/** Ends the fleet's open run (the LBs' own tuners take over), and runs `inTx` in the same transaction. */
export function endFleetRun(store: Store, now: number, inTx?: InTransaction): Promise<void> {
  return store.transaction(async (tx) => {
    await endRun(tx, null, now);
    await inTx?.(tx);
  });
}

/** What newRun makes: the run's row, its tuner, and when its trial started. */
export interface NewRun {
  run: TunerRunRow;
  tuner: EsTuner;
  trialStart: TrialStart | null;
}

/** Ends the LB's current run (the fleet's, for `lbId` null) and starts a fresh one (new tuner, empty
 * trajectory). `seed` gives the tuner's random seed from the new run's id; `pause`, why it starts
 * paused (its LB's policy ignores the weights): then it runs no trial from the first. `inTx` runs in
 * the same transaction, given the new run (its tuner exists only once the run's id is known). */
export function newRun(
  store: Store,
  run: { lbId: string | null; weights: Weights; settings: TunerSettings | null; running: boolean; seed: (runId: number) => number; pause?: string | null },
  now: number,
  inTx?: InTransaction<[NewRun]>,
): Promise<NewRun> {
  const { lbId, weights, settings, running } = run;
  return store.transaction(async (tx) => {
    const { dialect, db, tables } = tx;
    const { loadBalancers, tunerRuns } = tables;
    // Two resets of one LB on two consoles at once: under PostgreSQL's read committed each would end
    // the runs it sees and insert its own, leaving two open runs. Locking the LB's row first makes
    // them take turns, the second ending the first's new run; the fleet's run locks every LB's row.
    // (SQLite serialises writers already.)
    if (dialect === "pg") {
      await db
        .select({ id: loadBalancers.id })
        .from(loadBalancers)
        .where(lbId === null ? undefined : eq(loadBalancers.id, lbId))
        .for("update");
    }
    await endRun(tx, lbId, now);
    const [inserted] = await db
      .insert(tunerRuns)
      .values({ lbId, mode: running ? "online" : "static", running, settingsJson: "{}", startedAt: now, updatedAt: now })
      .returning();
    if (!inserted) throw new Error(`tuner run of ${lbId ?? "the fleet"} not inserted`);
    const patch = settings ? configPatch(settings) : {};
    const bounds = patch.bounds ?? WEIGHT_BOUNDS;
    // Weights from an older configuration may sit outside the bounds: start from the nearest legal point.
    const initial = {
      rtt: Math.min(Math.max(weights.rtt, bounds.rtt[0]), bounds.rtt[1]),
      queue: Math.min(Math.max(weights.queue, bounds.queue[0]), bounds.queue[1]),
    };
    const tuner = guard(() => new EsTuner({ ...patch, seed: run.seed(inserted.id), mode: running ? "online" : "static" }, initial));
    if (run.pause) tuner.pause(run.pause);
    const trial = tuner.current().trial;
    const trialStart = trial ? { id: trial.id, at: now } : null;
    const state = tuner.state();
    const [row] = await db
      .update(tunerRuns)
      .set({ settingsJson: JSON.stringify(settingsOf(state.config)), stateJson: storedStateJson(state, trialStart) })
      .where(eq(tunerRuns.id, inserted.id))
      .returning();
    const created = { run: row ?? inserted, tuner, trialStart };
    await inTx?.(tx, created);
    return created;
  });
}

/** Records the tuner's state, and the step in the same transaction; returns the run's new revision.
 * Every write is fenced by the run's revision: when another console wrote the run since this one
 * read it, the write rolls back (RunMoved) and records nothing, so neither side's change is lost
 * unseen. With a `term` (the leader's writes) it is fenced by the lease as well: a console that lost
 * the lease records nothing. Term 0 is a follower's write of an operator's change, or a lone console's.
 * `inTx` runs in the same transaction once the run is written (not when its LB is gone: nothing was). */
export function persistRun(store: Store, live: PersistedTuner, step: TunerStep | null, term: number, now: number, inTx?: InTransaction): Promise<number> {
  // A trial not stamped yet started now: every operation that starts one writes the run.
  stampTrial(live, now);
  const state = live.tuner.state();
  return store.transaction(async (tx) => {
    const { db, tables } = tx;
    const { consoleLeases, tunerRuns, tunerSteps } = tables;
    if (step) {
      await db.insert(tunerSteps).values({
        runId: live.runId,
        step: step.step,
        weightRtt: step.weights.rtt,
        weightQueue: step.weights.queue,
        fitnessP95TtftMs: Number.isFinite(step.fitnessP95TtftMs) ? step.fitnessP95TtftMs : null,
        sigma: step.sigma,
        accepted: step.accepted,
        guardrail: step.guardrail === "pass" ? null : step.guardrail,
        kind: step.kind,
        configVersion: step.configVersion,
        trialJson: step.trial ? JSON.stringify(step.trial) : null,
        at: now,
      });
    }
    const [row] = await db
      .update(tunerRuns)
      .set({
        mode: state.mode,
        running: live.running,
        converged: state.converged,
        settingsJson: JSON.stringify(live.settings),
        stateJson: storedStateJson(state, live.trialStart),
        // The revision moves forward on every write, even within one millisecond or against a
        // clock behind the last writer's.
        updatedAt: largerOf(sql`${tunerRuns.updatedAt} + 1`, now),
      })
      .where(and(eq(tunerRuns.id, live.runId), eq(tunerRuns.updatedAt, live.writtenAt), term === 0 ? undefined : whileLeading(consoleLeases, term)))
      .returning({ updatedAt: tunerRuns.updatedAt });
    if (row) {
      await inTx?.(tx);
      return row.updatedAt;
    }
    if (term !== 0) throw new RunMoved();
    const [still] = await db.select({ id: tunerRuns.id }).from(tunerRuns).where(eq(tunerRuns.id, live.runId)).limit(1);
    if (still) throw new RunMoved();
    // The run is gone (its LB was deleted meanwhile): nothing to compare later.
    return live.writtenAt;
  });
}
