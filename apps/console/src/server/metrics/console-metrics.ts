// The console's Prometheus metrics (GET /metrics), every one defined here: one module for the process,
// so that later series (tuner pauses, per-client-key counts) join these names. Two kinds:
// - Events the console acts on are counted where they happen: config pushes by result, failovers and
//   failbacks by trigger. ConfigPublisher and FailoverService receive this object (its count*
//   methods) in their deps.
// - Everything else mirrors state and is read at scrape time from the running components (observe()):
//   LB health and lifecycle, config versions, where each region's clients go, the telemetry streams,
//   and the tuners (their steps are counted from tuner_steps, the durable record, so the counters
//   survive a console restart, and start at 0 for every tuner; their live trial from the TunerService).
// Node process metrics come from @meridian/proxy/process-metrics, as the LBs' do.
import "server-only";
import { and, eq, isNotNull, sql } from "drizzle-orm";
import { Counter, Gauge, Registry } from "prom-client";
import { renderWithProcessMetrics } from "@meridian/proxy/process-metrics";
import { LB_STATES, type Store } from "@meridian/db";
import type { GuardrailVerdict, TunerStep } from "@meridian/tuner";
import type { ConfigPublisher } from "../runtime/config-publisher";
import type { EntrypointResolver, EntrypointStatus } from "../runtime/entrypoint-resolver";
import type { PutConfigResult } from "../runtime/lb-admin-client";
import type { LbHealthBook } from "../runtime/lb-health";
import type { TelemetryHub } from "../runtime/telemetry-hub";
import { FLEET } from "../runtime/tuner-scope";
import type { TunerService } from "../runtime/tuner-service";

/** What a config push came to: acked, stale, rejected, unreachable. */
type PushResult = PutConfigResult["kind"];

/** Every push result, checked against PutConfigResult so a new kind cannot be left out. */
const PUSH_RESULTS = Object.keys({ acked: 1, stale: 1, rejected: 1, unreachable: 1 } satisfies Record<PushResult, 1>) as PushResult[];
const TRIGGERS = ["automatic", "operator"] as const;

const ENTRYPOINT_STATUSES: readonly EntrypointStatus[] = ["assigned", "fallback", "unresolved"];
/** The tuner's lifecycle as the tuner page shows it. */
const TUNER_STATES = ["running", "paused", "stopped", "converged"] as const;
/** Every kind of tuner step, checked against TunerStep so a new kind cannot be left out. */
const STEP_KINDS = Object.keys({ candidate: 1, remeasure: 1, trial: 1 } satisfies Record<TunerStep["kind"], 1>) as TunerStep["kind"][];
/** Every guardrail that can reject a candidate, checked against the tuner's verdicts. */
const GUARDRAILS = Object.keys({ e2e: 1, share: 1, errors: 1 } satisfies Record<Exclude<GuardrailVerdict, "pass">, 1>);

/** What the scrape-time gauges read. */
export interface ConsoleMetricsSources {
  store: Store;
  book: Pick<LbHealthBook, "lb">;
  publisher: Pick<ConfigPublisher, "status">;
  telemetry: Pick<TelemetryHub, "status">;
  tuners: Pick<TunerService, "describe" | "scope">;
  entrypoints: Pick<EntrypointResolver, "resolve">;
}

export class ConsoleMetrics {
  readonly registry = new Registry();
  private readonly configPushes: Counter<"lb" | "result">;
  private readonly failovers: Counter<"lb" | "trigger">;
  private readonly failbacks: Counter<"lb" | "trigger">;
  /** LBs whose event series exist (at 0 until their first event). */
  private readonly knownLbs = new Set<string>();

  constructor(version: string) {
    const registers = [this.registry];
    new Gauge({
      name: "meridian_console_build_info",
      help: "Always 1; the labels name the console version and the Node.js version running it.",
      labelNames: ["version", "nodejs"],
      registers,
    }).set({ version, nodejs: process.version }, 1);
    this.configPushes = new Counter({
      name: "meridian_console_config_pushes_total",
      help: "PUT /admin/config attempts by LB and result: acked, stale (the LB runs a newer version), rejected (any other HTTP refusal), unreachable.",
      labelNames: ["lb", "result"],
      registers,
    });
    this.failovers = new Counter({
      name: "meridian_console_failovers_total",
      help: "LB failovers by trigger: operator, or automatic (the health monitor after failed probes).",
      labelNames: ["lb", "trigger"],
      registers,
    });
    this.failbacks = new Counter({
      name: "meridian_console_failbacks_total",
      help: "LB failbacks by trigger: operator, or automatic (after the healthy period).",
      labelNames: ["lb", "trigger"],
      registers,
    });
  }

  countConfigPush(lbId: string, result: PushResult): void {
    this.known(lbId);
    this.configPushes.inc({ lb: lbId, result });
  }

  countFailover(lbId: string, automatic: boolean): void {
    this.known(lbId);
    this.failovers.inc({ lb: lbId, trigger: automatic ? "automatic" : "operator" });
  }

  countFailback(lbId: string, automatic: boolean): void {
    this.known(lbId);
    this.failbacks.inc({ lb: lbId, trigger: automatic ? "automatic" : "operator" });
  }

  /** Creates the LB's event series at 0 once the console knows the LB (at a scrape, or its first
   * event). Prometheus' increase() and rate() need a sample before the event: a series born at 1
   * hides the first failover of an LB, the usual case for a rare event. Bounded: LBs of the database
   * times the fixed results and triggers. */
  private known(lbId: string): void {
    if (this.knownLbs.has(lbId)) return;
    this.knownLbs.add(lbId);
    for (const result of PUSH_RESULTS) this.configPushes.inc({ lb: lbId, result }, 0);
    for (const trigger of TRIGGERS) {
      this.failovers.inc({ lb: lbId, trigger }, 0);
      this.failbacks.inc({ lb: lbId, trigger }, 0);
    }
  }

  /** The exposition text with the process metrics, and its content type. */
  render(): Promise<{ text: string; contentType: string }> {
    return renderWithProcessMetrics(this.registry);
  }

  /** Registers the gauges that read the running console at scrape time. Call once. */
  observe(sources: ConsoleMetricsSources): void {
    const registers = [this.registry];
    const { db, tables } = sources.store;
    const { loadBalancers, tunerRuns, tunerSteps } = tables;
    const lbs = async () => {
      const rows = await db.select().from(loadBalancers).orderBy(loadBalancers.id);
      for (const lb of rows) this.known(lb.id);
      return rows;
    };

    // ---- LB health, lifecycle and config versions
    new Gauge({
      name: "meridian_console_lb_up",
      help: "1 when the LB answered its last health probe from the console, 0 when it did not; absent before the first probe.",
      labelNames: ["lb"],
      registers,
      async collect() {
        this.reset();
        for (const lb of await lbs()) {
          const healthy = sources.book.lb(lb.id)?.healthy;
          if (healthy !== undefined && healthy !== null) this.set({ lb: lb.id }, healthy ? 1 : 0);
        }
      },
    });
    new Gauge({
      name: "meridian_console_lb_probe_failures",
      help: "Consecutive health probes the LB has failed (0 while it answers).",
      labelNames: ["lb"],
      registers,
      async collect() {
        this.reset();
        for (const lb of await lbs()) this.set({ lb: lb.id }, sources.book.lb(lb.id)?.consecutiveFailures ?? 0);
      },
    });
    new Gauge({
      name: "meridian_console_lb_state",
      help: "The LB's lifecycle, one series per state: 1 for the current one (healthy, failed, failed-over).",
      labelNames: ["lb", "state"],
      registers,
      async collect() {
        this.reset();
        for (const lb of await lbs()) for (const state of LB_STATES) this.set({ lb: lb.id, state }, lb.state === state ? 1 : 0);
      },
    });
    new Gauge({
      name: "meridian_console_lb_config_version",
      help: "Config versions per LB: wanted (the latest the console recorded), acked (the latest the LB acknowledged), running (what the LB last reported).",
      labelNames: ["lb", "kind"],
      registers,
      async collect() {
        this.reset();
        for (const lb of await lbs()) {
          this.set({ lb: lb.id, kind: "wanted" }, lb.configVersion);
          this.set({ lb: lb.id, kind: "acked" }, lb.ackedVersion);
          const running = sources.book.lb(lb.id)?.state?.configVersion;
          if (running !== undefined) this.set({ lb: lb.id, kind: "running" }, running);
        }
      },
    });
    new Gauge({
      name: "meridian_console_config_push_failing",
      help: "1 while the LB's last config push failed (the publisher keeps retrying), else 0.",
      labelNames: ["lb"],
      registers,
      async collect() {
        this.reset();
        for (const lb of await lbs()) this.set({ lb: lb.id }, sources.publisher.status(lb.id).lastError === null ? 0 : 1);
      },
    });
    new Gauge({
      name: "meridian_console_entrypoint_status",
      help: "Where each region's clients go, one series per status: 1 for the current one (assigned: its own LB; fallback: the nearest healthy LB while its own is failed; unresolved: no healthy LB, an alarm).",
      labelNames: ["region", "status"],
      registers,
      async collect() {
        this.reset();
        for (const entry of await sources.entrypoints.resolve()) {
          for (const status of ENTRYPOINT_STATUSES) this.set({ region: entry.region, status }, entry.status === status ? 1 : 0);
        }
      },
    });

    // ---- Telemetry streams (LB -> console)
    const streams = () => sources.telemetry.status();
    new Gauge({
      name: "meridian_console_telemetry_connected",
      help: "1 while the console's telemetry stream from the LB is open.",
      labelNames: ["lb"],
      registers,
      collect() {
        this.reset();
        for (const s of streams()) this.set({ lb: s.lbId }, s.connected ? 1 : 0);
      },
    });
    new Gauge({
      name: "meridian_console_telemetry_lag_events",
      help: "Telemetry events the LB had written (by its last /admin/state) that the console has not received yet.",
      labelNames: ["lb"],
      registers,
      collect() {
        this.reset();
        for (const s of streams()) {
          const written = sources.book.lb(s.lbId)?.state?.telemetry.lastSeq;
          if (written !== undefined) this.set({ lb: s.lbId }, Math.max(0, written - s.lastSeq));
        }
      },
    });
    new Gauge({
      name: "meridian_console_telemetry_lag_seconds",
      help: "How late the last telemetry event from the LB arrived: console receipt time minus the event's time.",
      labelNames: ["lb"],
      registers,
      collect() {
        this.reset();
        for (const s of streams()) if (s.lastEventLagMs !== null) this.set({ lb: s.lbId }, s.lastEventLagMs / 1000);
      },
    });
    const streamCounter = (name: string, help: string, read: (s: ReturnType<typeof streams>[number]) => number) =>
      new Counter({
        name,
        help,
        labelNames: ["lb"],
        registers,
        collect() {
          this.reset();
          for (const s of streams()) this.inc({ lb: s.lbId }, read(s));
        },
      });
    streamCounter(
      "meridian_console_telemetry_events_total",
      "Telemetry events received from the LB since the stream was opened (duplicates excluded).",
      (s) => s.events,
    );
    streamCounter("meridian_console_telemetry_dropped_events_total", "Events the LB's ring no longer held when the console asked for them.", (s) => s.dropped);
    streamCounter("meridian_console_telemetry_reconnects_total", "Times the console reopened the LB's telemetry stream.", (s) => s.reconnects);

    // ---- Tuners
    // One describe() per LB per scrape, shared by the tuner gauges and the steps counter: a scrape
    // reads them within a moment, and a second look within a second would read the same.
    type Described = { lbId: string; tuner: Awaited<ReturnType<TunerService["describe"]>> }[];
    let described: Promise<Described> = Promise.resolve([]);
    let describedAt = Number.NEGATIVE_INFINITY;
    const tuners = () => {
      if (Date.now() - describedAt > 1_000) {
        described = (async () => {
          const rows = await lbs();
          // The fleet's tuner, while it is on, as lb="*".
          const keys = (await sources.tuners.scope()) === "fleet" ? [...rows.map((lb) => lb.id), FLEET] : rows.map((lb) => lb.id);
          return Promise.all(keys.map(async (lbId) => ({ lbId, tuner: await sources.tuners.describe(lbId) })));
        })();
        describedAt = Date.now();
      }
      return described;
    };
    // PostgreSQL counts in bigint (read back as strings: mapWith) and cannot sum a boolean (CASE WHEN).
    const stepCounts = () =>
      db
        .select({
          lbId: tunerRuns.lbId,
          kind: tunerSteps.kind,
          steps: sql<number>`count(*)`.mapWith(Number),
          accepted: sql<number>`sum(case when ${tunerSteps.accepted} then 1 else 0 end)`.mapWith(Number),
        })
        .from(tunerSteps)
        .innerJoin(tunerRuns, eq(tunerSteps.runId, tunerRuns.id))
        .groupBy(tunerRuns.lbId, tunerSteps.kind);
    /**
     * A counter of the tuner_steps record per tuner and one more label: every tuner the console
     * describes at 0 for each of `values` before its first step, then `counts`. increase() needs a
     * sample before the step (a series born at 1 hides it, and MeridianTunerStalled would call a
     * tuner that stepped "stalled"). Bounded: the tuners times the fixed values.
     */
    const perTunerCounter = (
      name: string,
      help: string,
      label: string,
      values: readonly string[],
      counts: () => Promise<{ lbId: string | null; value: string | null; n: number }[]>,
    ) =>
      new Counter({
        name,
        help,
        labelNames: ["lb", label],
        registers,
        async collect() {
          this.reset();
          for (const { lbId } of await tuners()) for (const value of values) this.inc({ lb: lbId, [label]: value }, 0);
          for (const row of await counts()) this.inc({ lb: row.lbId ?? FLEET, [label]: row.value ?? "" }, row.n);
        },
      });
    perTunerCounter(
      "meridian_console_tuner_steps_total",
      "Tuner steps (evaluated windows) per LB and kind, over every run, from the console's tuner_steps record.",
      "kind",
      STEP_KINDS,
      async () => (await stepCounts()).map((row) => ({ lbId: row.lbId, value: row.kind, n: row.steps })),
    );
    new Counter({
      name: "meridian_console_tuner_accepted_steps_total",
      help: "Tuner steps whose candidate was accepted, per LB, over every run.",
      labelNames: ["lb"],
      registers,
      async collect() {
        this.reset();
        // From 0 for every tuner described, as the steps counter (increase() sees the first acceptance).
        const byLb = new Map<string, number>((await tuners()).map(({ lbId }) => [lbId, 0]));
        for (const row of await stepCounts()) byLb.set(row.lbId ?? FLEET, (byLb.get(row.lbId ?? FLEET) ?? 0) + (row.accepted ?? 0));
        for (const [lb, accepted] of byLb) this.inc({ lb }, accepted);
      },
    });
    perTunerCounter(
      "meridian_console_tuner_guardrail_rejections_total",
      "Tuner candidates rejected for breaking a guardrail (e2e, share, errors), per LB, over every run.",
      "guardrail",
      GUARDRAILS,
      () =>
        db
          .select({ lbId: tunerRuns.lbId, value: tunerSteps.guardrail, n: sql<number>`count(*)`.mapWith(Number) })
          .from(tunerSteps)
          .innerJoin(tunerRuns, eq(tunerSteps.runId, tunerRuns.id))
          .where(and(isNotNull(tunerSteps.guardrail), eq(tunerSteps.accepted, false)))
          .groupBy(tunerRuns.lbId, tunerSteps.guardrail),
    );
    new Gauge({
      name: "meridian_console_tuner_state",
      help: "The LB's tuner, one series per state: 1 for the current one (running: stepping online; paused: online but the LB's policy ignores the weights; stopped: weights frozen; converged).",
      labelNames: ["lb", "state"],
      registers,
      async collect() {
        this.reset();
        for (const { lbId, tuner } of await tuners()) {
          const current = tuner.converged ? "converged" : tuner.running ? (tuner.paused !== null ? "paused" : "running") : "stopped";
          for (const state of TUNER_STATES) this.set({ lb: lbId, state }, state === current ? 1 : 0);
        }
      },
    });
    new Gauge({
      name: "meridian_console_tuner_trial_info",
      help: "Always 1; the role label says what the LB's live weights are being measured as (incumbent, candidate, remeasure), mode the tuner's mode.",
      labelNames: ["lb", "role", "mode"],
      registers,
      async collect() {
        this.reset();
        for (const { lbId, tuner } of await tuners()) this.set({ lb: lbId, role: tuner.role, mode: tuner.mode }, 1);
      },
    });
    new Gauge({
      name: "meridian_console_tuner_trial_samples",
      help: "Samples in the current trial: both arms of the A/B trial, or the paper mode's evaluation window.",
      labelNames: ["lb"],
      registers,
      async collect() {
        this.reset();
        for (const { lbId, tuner } of await tuners()) {
          this.set({ lb: lbId }, tuner.trial ? tuner.trial.samples.incumbent + tuner.trial.samples.candidate : tuner.windowFill);
        }
      },
    });
    new Gauge({
      name: "meridian_console_tuner_trial_window_samples",
      help: "Samples a trial ends at: the A/B trial's sample cap, or the paper mode's window.",
      labelNames: ["lb"],
      registers,
      async collect() {
        this.reset();
        for (const { lbId, tuner } of await tuners()) this.set({ lb: lbId }, tuner.trial ? tuner.trial.maxSamples : tuner.window);
      },
    });
    new Gauge({
      name: "meridian_console_tuner_sigma",
      help: "The (1+1)-ES step size.",
      labelNames: ["lb"],
      registers,
      async collect() {
        this.reset();
        for (const { lbId, tuner } of await tuners()) this.set({ lb: lbId }, tuner.sigma);
      },
    });
    new Gauge({
      name: "meridian_console_tuner_weight",
      help: "Tuner weights by term (rtt, queue) and role: live (what the LB routes with now) or incumbent (the best accepted).",
      labelNames: ["lb", "term", "role"],
      registers,
      async collect() {
        this.reset();
        for (const { lbId, tuner } of await tuners()) {
          for (const [role, weights] of [
            ["live", tuner.weights],
            ["incumbent", tuner.incumbent],
          ] as const) {
            this.set({ lb: lbId, term: "rtt", role }, weights.rtt);
            this.set({ lb: lbId, term: "queue", role }, weights.queue);
          }
        }
      },
    });
    new Gauge({
      name: "meridian_console_tuner_incumbent_p95_ttft_seconds",
      help: "The incumbent's p95 TTFT at its last evaluation; absent before the first.",
      labelNames: ["lb"],
      registers,
      async collect() {
        this.reset();
        for (const { lbId, tuner } of await tuners()) {
          if (tuner.incumbentP95TtftMs !== null && Number.isFinite(tuner.incumbentP95TtftMs)) this.set({ lb: lbId }, tuner.incumbentP95TtftMs / 1000);
        }
      },
    });
  }
}
