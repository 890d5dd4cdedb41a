// TunerService: one EsTuner per LB, fed by the TelemetryHub.
// - The tuner's state is persisted to tuner_runs after every step (and every operator change), and
//   each step to tuner_steps, so a console restart resumes where it stopped.
// - When the tuner's current weights are not yet published (a new candidate, a remeasure, manual
//   weights), they are written to the LB row and published; the tuner is then bound to the version
//   that carries them, so it scores only requests routed under those weights.
// - Any new config version that carries the tuner's weights (a topology change, a 409 bump) rebinds
//   the tuner to it, so unrelated pushes do not starve its window.
// - Every measurement (candidate or remeasure) is bound to a fresh version, and a restored tuner starts
//   with an empty window that the TelemetryHub's replay refills, so no event is scored twice or for
//   weights other than the ones that routed it.
// "running" = the ES is stepping (mode online and started). stop() freezes the incumbent (static).
import "server-only";
import { and, desc, eq, isNull } from "drizzle-orm";
import type { Logger } from "pino";
import { EsTuner, TunerInputError, type EvaluationMode, type TunerConfig, type TunerState, type TunerStep, type Weights } from "@meridian/tuner";
import { WEIGHT_BOUNDS } from "@meridian/routing/types";
import type { LbConfig, TelemetryEvent } from "@meridian/protocol";
import { loadBalancers, tunerRuns, tunerSteps, type Db, type TunerRunRow } from "@meridian/db";
import { invalid, notFound } from "../errors";
import type { ConfigPublisher } from "./config-publisher";
import { isError } from "./rolling-stats";
import type { TelemetryHub } from "./telemetry-hub";

/** What the tuner service uses, and nothing else. */
export interface TunerServiceDeps {
  db: Db;
  log: Logger;
  telemetry: Pick<TelemetryHub, "onEvent">;
  publisher: Pick<ConfigPublisher, "onNewVersion" | "publish">;
}

/** Operator-tunable settings, as stored in tuner_runs.settings_json. */
export interface TunerSettings {
  bounds: { rtt: [number, number]; queue: [number, number] };
  window: number;
  hop: number;
  evaluation: EvaluationMode;
  guardrails: { enabled: boolean; e2eRatio: number; maxShare: number; maxErrorRate: number };
}

interface LiveTuner {
  runId: number;
  tuner: EsTuner;
  running: boolean;
  settings: TunerSettings;
}

function seedFor(lbId: string, runId: number): number {
  let hash = 2166136261;
  for (const char of `${lbId}#${runId}`) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619) >>> 0;
  return hash;
}

function settingsOf(config: TunerConfig): TunerSettings {
  return {
    bounds: { rtt: [config.bounds.rtt[0], config.bounds.rtt[1]], queue: [config.bounds.queue[0], config.bounds.queue[1]] },
    window: config.window,
    hop: config.hop,
    evaluation: config.evaluation,
    guardrails: {
      enabled: config.guardrails.enabled,
      e2eRatio: config.guardrails.e2eTolerance,
      maxShare: config.guardrails.maxShare,
      maxErrorRate: config.guardrails.maxErrorRate,
    },
  };
}

function configPatch(settings: TunerSettings): Partial<TunerConfig> {
  return {
    bounds: settings.bounds,
    window: settings.window,
    hop: settings.hop,
    evaluation: settings.evaluation,
    guardrails: {
      enabled: settings.guardrails.enabled,
      e2eTolerance: settings.guardrails.e2eRatio,
      maxShare: settings.guardrails.maxShare,
      maxErrorRate: settings.guardrails.maxErrorRate,
    },
  };
}

const sameWeights = (a: Weights, b: Weights) => Math.abs(a.rtt - b.rtt) < 1e-12 && Math.abs(a.queue - b.queue) < 1e-12;

/** Tuner input errors become domain errors with the tuner's own field-naming message. */
function guard<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof TunerInputError) throw invalid(error.message);
    throw error;
  }
}

export class TunerService {
  private readonly tuners = new Map<string, LiveTuner>();

  constructor(private readonly deps: TunerServiceDeps) {}

  start(): void {
    for (const lb of this.deps.db.select({ id: loadBalancers.id }).from(loadBalancers).all()) this.ensure(lb.id);
    this.deps.telemetry.onEvent((event) => this.observe(event));
    this.deps.publisher.onNewVersion((lbId, version, config) => this.onNewVersion(lbId, version, config));
    // Publish whatever the tuners want live (a restored candidate whose version the LB never took).
    for (const lbId of this.tuners.keys()) this.applyCurrent(lbId);
  }

  stop(): void {
    this.tuners.clear();
  }

  forget(lbId: string): void {
    this.tuners.delete(lbId);
  }

  /** The LB's live tuner, created (or restored from its current run) on first use. */
  ensure(lbId: string): LiveTuner {
    const existing = this.tuners.get(lbId);
    if (existing) return existing;
    const lb = this.deps.db.select().from(loadBalancers).where(eq(loadBalancers.id, lbId)).get();
    if (!lb) throw notFound("load balancer", lbId);
    let run = this.currentRun(lbId);
    let tuner: EsTuner | null = null;
    if (run?.stateJson) {
      try {
        const stored = JSON.parse(run.stateJson) as TunerState;
        // The persisted window may hold events that the TelemetryHub replays after a restart (it
        // resubscribes from seq 0 and the LB resends its buffer), so keeping them would score those
        // events twice. Start the window empty: the replay refills it from the LB's own record.
        tuner = EsTuner.restore({ ...stored, window: [], samplesSinceEvaluation: 0 });
      } catch (error) {
        this.deps.log.error({ lbId, err: error }, "stored tuner state unreadable; starting a new run");
        run = undefined;
      }
    }
    if (!run || !tuner) {
      const created = this.newRun(lbId, { rtt: lb.weightRtt, queue: lb.weightQueue }, null, false);
      run = created.run;
      tuner = created.tuner;
    }
    const live: LiveTuner = { runId: run.id, tuner, running: run.running, settings: settingsOf(tuner.state().config) };
    this.tuners.set(lbId, live);
    return live;
  }

  private currentRun(lbId: string): TunerRunRow | undefined {
    return this.deps.db
      .select()
      .from(tunerRuns)
      .where(and(eq(tunerRuns.lbId, lbId), isNull(tunerRuns.endedAt)))
      .orderBy(desc(tunerRuns.id))
      .limit(1)
      .get();
  }

  /** Ends the LB's current run and starts a fresh one (new tuner, empty trajectory). */
  private newRun(lbId: string, weights: Weights, settings: TunerSettings | null, running: boolean): { run: TunerRunRow; tuner: EsTuner } {
    const now = Date.now();
    return this.deps.db.transaction((tx) => {
      tx.update(tunerRuns)
        .set({ endedAt: now })
        .where(and(eq(tunerRuns.lbId, lbId), isNull(tunerRuns.endedAt)))
        .run();
      const inserted = tx
        .insert(tunerRuns)
        .values({ lbId, mode: running ? "online" : "static", running, settingsJson: "{}", startedAt: now, updatedAt: now })
        .returning()
        .get();
      const patch = settings ? configPatch(settings) : {};
      const bounds = (patch.bounds ?? WEIGHT_BOUNDS) as TunerSettings["bounds"];
      // Weights from an older configuration may sit outside the bounds: start from the nearest legal point.
      const initial = {
        rtt: Math.min(Math.max(weights.rtt, bounds.rtt[0]), bounds.rtt[1]),
        queue: Math.min(Math.max(weights.queue, bounds.queue[0]), bounds.queue[1]),
      };
      const tuner = guard(() => new EsTuner({ ...patch, seed: seedFor(lbId, inserted.id), mode: running ? "online" : "static" }, initial));
      const state = tuner.state();
      const row = tx
        .update(tunerRuns)
        .set({ settingsJson: JSON.stringify(settingsOf(state.config)), stateJson: JSON.stringify(state) })
        .where(eq(tunerRuns.id, inserted.id))
        .returning()
        .get();
      return { run: row ?? inserted, tuner };
    });
  }

  private persist(live: LiveTuner, step: TunerStep | null): void {
    const state = live.tuner.state();
    const now = Date.now();
    this.deps.db.transaction((tx) => {
      if (step) {
        tx.insert(tunerSteps)
          .values({
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
            at: now,
          })
          .run();
      }
      tx.update(tunerRuns)
        .set({
          mode: state.mode,
          running: live.running,
          converged: state.converged,
          settingsJson: JSON.stringify(live.settings),
          stateJson: JSON.stringify(state),
          updatedAt: now,
        })
        .where(eq(tunerRuns.id, live.runId))
        .run();
    });
  }

  /** Publishes the tuner's current weights when they are not live yet, and binds the version. */
  private applyCurrent(lbId: string): void {
    const live = this.tuners.get(lbId);
    if (!live) return;
    const current = live.tuner.current();
    if (current.version !== null) return;
    const lb = this.deps.db.select().from(loadBalancers).where(eq(loadBalancers.id, lbId)).get();
    if (!lb) return;
    if (!sameWeights({ rtt: lb.weightRtt, queue: lb.weightQueue }, current.weights)) {
      this.deps.db.update(loadBalancers).set({ weightRtt: current.weights.rtt, weightQueue: current.weights.queue }).where(eq(loadBalancers.id, lbId)).run();
    }
    // A measurement gets a version of its own even when its config equals the latest one (a remeasure
    // right after Start, a candidate clipped onto the incumbent): a reused version would let events
    // routed before this window — already scored, or replayed after a restart — count for it.
    const measuring = current.role !== "incumbent";
    const version = this.deps.publisher.publish(lbId, { force: measuring });
    // publish() binds through onNewVersion when it recorded a version; for frozen weights an unchanged
    // config keeps its version, which then carries these weights.
    if (version !== null && live.tuner.current().version === null) live.tuner.bind(version);
    this.persist(live, null);
  }

  private onNewVersion(lbId: string, version: number, config: LbConfig): void {
    const live = this.tuners.get(lbId);
    if (!live) return;
    if (sameWeights(live.tuner.current().weights, config.weights)) live.tuner.bind(version);
  }

  observe(event: TelemetryEvent): TunerStep | null {
    const live = this.tuners.get(event.lbId);
    if (!live?.running) return null;
    const step = live.tuner.observe({
      configVersion: event.configVersion,
      ttftMs: event.ttftMs,
      e2eMs: event.e2eMs,
      replicaId: event.replicaId,
      ok: !isError(event),
    });
    if (!step) return null;
    if (step.converged) live.running = false;
    this.persist(live, step);
    this.applyCurrent(event.lbId);
    return step;
  }

  // --- operator actions (audited by the service layer) ---------------------------------------

  startTuning(lbId: string): void {
    const live = this.ensure(lbId);
    guard(() => live.tuner.setMode("online"));
    live.running = true;
    this.persist(live, null);
    this.applyCurrent(lbId);
  }

  stopTuning(lbId: string): void {
    const live = this.ensure(lbId);
    // Freeze the incumbent: a candidate under measurement must not stay live.
    if (live.tuner.mode === "online") guard(() => live.tuner.setMode("static"));
    live.running = false;
    this.persist(live, null);
    this.applyCurrent(lbId);
  }

  reset(lbId: string): void {
    const live = this.ensure(lbId);
    const state = live.tuner.state();
    const created = this.newRun(lbId, state.initial, live.settings, live.running);
    this.tuners.set(lbId, { runId: created.run.id, tuner: created.tuner, running: live.running, settings: live.settings });
    this.applyCurrent(lbId);
  }

  setManual(lbId: string, weights: Weights): void {
    const live = this.ensure(lbId);
    const [rlo, rhi] = live.settings.bounds.rtt;
    const [qlo, qhi] = live.settings.bounds.queue;
    if (weights.rtt < rlo || weights.rtt > rhi) throw invalid(`W_rtt ${weights.rtt} is outside the bounds [${rlo}, ${rhi}]`);
    if (weights.queue < qlo || weights.queue > qhi) throw invalid(`W_queue ${weights.queue} is outside the bounds [${qlo}, ${qhi}]`);
    guard(() => live.tuner.setManualWeights(weights));
    live.running = false;
    this.persist(live, null);
    this.applyCurrent(lbId);
  }

  updateSettings(lbId: string, patch: Partial<TunerSettings>): TunerSettings {
    const live = this.ensure(lbId);
    const next: TunerSettings = {
      ...live.settings,
      ...patch,
      guardrails: { ...live.settings.guardrails, ...(patch.guardrails ?? {}) },
    };
    const state = live.tuner.state();
    const rebuilt = guard(() => {
      const tuner = EsTuner.restore({ ...state, config: { ...state.config, ...configPatch({ ...next, bounds: live.settings.bounds }) } });
      if (patch.bounds) tuner.setBounds(next.bounds);
      return tuner;
    });
    live.tuner = rebuilt;
    live.settings = settingsOf(rebuilt.state().config);
    this.persist(live, null);
    this.applyCurrent(lbId);
    return live.settings;
  }

  describe(lbId: string) {
    const live = this.ensure(lbId);
    const state = live.tuner.state();
    const current = live.tuner.current();
    const steps = this.deps.db.select().from(tunerSteps).where(eq(tunerSteps.runId, live.runId)).orderBy(desc(tunerSteps.step)).limit(500).all().reverse();
    // tuner_steps has no column for the incumbent's guardrail standing; the tuner's own trajectory
    // (its last maxTrajectory steps, persisted with the state) carries it, which covers the rows the
    // UI shows. Older rows report null: unknown, not "pass".
    const incumbentGuardrailByStep = new Map(state.trajectory.map((t) => [t.step, t.incumbentGuardrail]));
    return {
      runId: live.runId,
      mode: state.mode,
      running: live.running && state.mode === "online" && !state.converged,
      weights: current.weights,
      role: current.role,
      boundVersion: current.version,
      incumbent: state.incumbent.weights,
      incumbentP95TtftMs: state.incumbent.p95TtftMs,
      // Whether the incumbent's latest window broke an absolute guardrail ("pass" until measured);
      // while it does, the tuner accepts less-bad violators to climb out, and the UI warns.
      incumbentGuardrail: state.incumbent.guardrail,
      incumbentMaxShare: state.incumbent.maxShare,
      incumbentErrorRate: state.incumbent.errorRate,
      bounds: live.settings.bounds,
      window: live.settings.window,
      hop: live.settings.hop,
      evaluation: live.settings.evaluation,
      guardrails: live.settings.guardrails,
      sigma: state.sigma,
      converged: state.converged,
      windowFill: state.window.length,
      steps: steps.map((s) => ({
        step: s.step,
        weights: { rtt: s.weightRtt, queue: s.weightQueue },
        fitnessP95TtftMs: s.fitnessP95TtftMs,
        sigma: s.sigma,
        accepted: s.accepted,
        // Informational: the candidate's own verdict. An accepted row may carry "share"/"errors" (a
        // less-bad violator accepted while the incumbent violated); `accepted` alone says what happened.
        guardrail: s.guardrail,
        incumbentGuardrail: incumbentGuardrailByStep.get(s.step) ?? null,
        kind: s.kind,
        configVersion: s.configVersion,
        at: s.at,
      })),
    };
  }
}
