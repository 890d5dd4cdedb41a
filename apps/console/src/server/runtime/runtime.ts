// The composition root of the console's server: the database and the long-running services, each
// built here with the few collaborators it uses (its *Deps interface) and nothing more. Only entry
// points import this module: global.ts (route handlers, instrumentation.ts) and the tests' harness.
// Everything else sees the narrow ServiceRuntime (services/context.ts), which this class satisfies
// structurally (checked where global.ts and the harness hand it over; importing the interface here
// would point the root back at the services). Structure and wiring order: apps/console/README.md,
// "Runtime structure".
import "server-only";
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import pino, { type Logger } from "pino";
import type { Database, Store } from "@meridian/db";
import { generateLbToken } from "@meridian/protocol/credentials";
import { SYSTEM_CONSOLE, SYSTEM_HEALTH } from "../audit-trail";
import { DEFAULT_LEASE_TIMING, type LeaseTiming } from "../leadership/lease";
import { LeaderElector } from "../leadership/leader-elector";
import { ConsoleMetrics } from "../metrics/console-metrics";
import { assignDefaultHomes } from "../services/home-lb";
import { AutoFailback } from "./auto-failback";
import { ConfigPublisher } from "./config-publisher";
import { CredentialKeeper } from "./credential-keeper";
import { EntrypointResolver } from "./entrypoint-resolver";
import { defaultSimCommand, ExperimentRunner, type SimCommand } from "./experiment-runner";
import { FailoverService } from "./failover";
import { HealthMonitor } from "./health-monitor";
import { LbAdminClient } from "./lb-admin-client";
import { LbHealthBook } from "./lb-health";
import { LbProofBook } from "./lb-proofs";
import { runningConfigReader, SettingsAdoption } from "./lb-settings-adoption";
import { presentableToken } from "./lb-token-rows";
import { ReplicaWarningLog } from "./replica-warnings";
import { TelemetryHub } from "./telemetry-hub";
import { TunerService } from "./tuner-service";
import { backoffMs, WakeSignal } from "./wake-signal";

export interface RuntimeOptions {
  /** Hex SHA-256 of the machine token /api/entrypoints accepts (MERIDIAN_ENTRYPOINTS_TOKEN); the
   * console keeps only the digest of a secret it only verifies. */
  entrypointsTokenSha256: string | null;
  /** How long an LB keeps accepting its previous token after a rotation (default 60 s). */
  tokenGraceMs?: number;
  /** Makes LB tokens (tests give a fixed one; default: 256 random bits). */
  newLbToken?: () => string;
  repoRoot: string;
  healthIntervalMs: number;
  failoverAfter: number;
  autoFailover: boolean;
  /** How long an automatically failed-over LB must stay healthy before it is failed back; 0 or
   * unset: never automatically. */
  autoFailbackAfterMs?: number;
  sessionTtlMs: number;
  /** Extra folders whose *.jsonl traces the experiments page offers. */
  traceDirs: string[];
  simCommand?: SimCommand;
  probeTimeoutMs?: number;
  /** Leadership of the background duties among the consoles sharing this database. `id` defaults
   * to host:pid:random (unique per process), `url` (shown to operators as the leader's address) to
   * none, `timing` to DEFAULT_LEASE_TIMING. */
  leadership?: { id?: string; url?: string | null; timing?: LeaseTiming };
  /** The tuner's trial-push rate limit and the clock it runs on (tests substitute a fake one). */
  minTrialPushIntervalMs?: number;
  tunerClock?: { now: () => number; setTimer: (fn: () => void, ms: number) => () => void };
  /** The console's version, for meridian_console_build_info. */
  version?: string;
}

export class ConsoleRuntime {
  readonly lbClient: LbAdminClient;
  readonly lbHealth = new LbHealthBook();
  readonly lbProofs = new LbProofBook();
  readonly publisher: ConfigPublisher;
  readonly credentials: CredentialKeeper;
  readonly health: HealthMonitor;
  readonly telemetry: TelemetryHub;
  readonly tuners: TunerService;
  readonly failover: FailoverService;
  readonly autoFailback: AutoFailback;
  readonly entrypoints: EntrypointResolver;
  readonly metrics: ConsoleMetrics;
  readonly experiments: ExperimentRunner;
  readonly store: Store;
  readonly leadership: LeaderElector;
  /** "stopped" is final: a console shutting down still serves requests on kept-alive connections,
   * and each asks getRuntime({ start: true }); restarted, it took the lease back with no duties and,
   * its LB client closed, failed every LB over. */
  private phase: "idle" | "started" | "stopped" = "idle";
  /** While this console leads: the timer that turns edits made on any console into config versions. */
  private reconcileTimer: NodeJS.Timeout | null = null;
  /** Whether the duties should be running (between onElected and onDeposed). */
  private leading = false;
  /** The duties' start in progress (their components read the database to start). */
  private dutiesStarting: Promise<void> | null = null;
  /** Counts startDuties calls: a start that is no longer the latest stops at its next step. */
  private dutiesGeneration = 0;
  /** Wakes the latest duties start from its wait before retrying a failed step (on stepping down). */
  private dutiesRetry: WakeSignal | null = null;
  private reconciling = false;

  constructor(
    /** The console's database: SQLite, or PostgreSQL shared with other consoles (createDatabase). */
    readonly database: Database,
    readonly options: RuntimeOptions,
    readonly log: Logger = pino({ level: "silent" }),
  ) {
    // Built in dependency order: each component receives only components built before it, so no
    // component reaches another through this container.
    const store = database.store;
    this.store = store;
    const timing = options.leadership?.timing ?? DEFAULT_LEASE_TIMING;
    const consoleId = options.leadership?.id ?? `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
    this.leadership = new LeaderElector({
      store: this.store,
      log,
      self: { id: consoleId, url: options.leadership?.url ?? null },
      timing,
      now: () => performance.now(),
      onElected: () => this.startDuties(timing.renewEveryMs),
      onDeposed: () => this.stopDuties(),
    });
    // Before start() this runtime has no duties and no lease (a script, a test, the demo seed): it
    // records config versions unfenced (term 0), as a lone console always did. Once started, only
    // the leader records them, under its term; once stopped, nobody here (another console leads).
    const leadership = { currentTerm: () => (this.phase === "idle" ? 0 : this.leadership.currentTerm()) };
    const metrics = new ConsoleMetrics(options.version ?? "0.0.0");
    const lbClient = new LbAdminClient({
      tokens: (lbId) => presentableToken(store, lbId),
      proofs: this.lbProofs,
      timeoutMs: options.probeTimeoutMs ?? 2_000,
    });
    // One adoption of each LB's running limits (lb-settings-adoption.ts), asked by the push loop before
    // a first push and by the health probe, whichever reaches the LB first.
    const adoption = new SettingsAdoption({ store, log, actor: SYSTEM_HEALTH, readConfig: runningConfigReader(lbClient) });
    const publisher = new ConfigPublisher({ store, log, lbClient, metrics, leadership, adoption });
    this.credentials = new CredentialKeeper({ store, log, lbClient, proofs: this.lbProofs, publisher, graceMs: options.tokenGraceMs ?? 60_000 });
    const telemetry = new TelemetryHub({ store, log, lbClient });
    const failover = new FailoverService({ store, log, book: this.lbHealth, publisher, metrics });
    const autoFailback = new AutoFailback({ log, failover, healthyForMs: options.autoFailbackAfterMs ?? 0 });
    const entrypoints = new EntrypointResolver({ store, log, book: this.lbHealth });
    this.lbClient = lbClient;
    this.publisher = publisher;
    this.telemetry = telemetry;
    this.failover = failover;
    this.autoFailback = autoFailback;
    this.entrypoints = entrypoints;
    this.tuners = new TunerService({
      store,
      log,
      telemetry,
      publisher,
      leadership,
      ...(options.minTrialPushIntervalMs !== undefined ? { minTrialPushIntervalMs: options.minTrialPushIntervalMs } : {}),
      ...(options.tunerClock ?? {}),
    });
    this.health = new HealthMonitor({
      acting: () => leadership.currentTerm() !== null,
      store,
      log,
      lbClient,
      book: this.lbHealth,
      publisher,
      telemetry,
      failover,
      autoFailback,
      entrypoints,
      replicaWarnings: new ReplicaWarningLog(log),
      adoption,
      intervalMs: options.healthIntervalMs,
      failoverAfter: options.failoverAfter,
      autoFailover: options.autoFailover,
    });
    metrics.observe({ store, book: this.lbHealth, publisher, telemetry, tuners: this.tuners, entrypoints });
    this.metrics = metrics;
    this.experiments = new ExperimentRunner({
      store,
      log,
      runnerId: consoleId,
      repoRoot: options.repoRoot,
      simCommand: options.simCommand ?? defaultSimCommand(options.repoRoot),
      traceDirs: options.traceDirs,
    });
  }

  /** A new LB token (shown once to the operator, presented to the LB by the console). */
  newLbToken(): string {
    return (this.options.newLbToken ?? generateLbToken)();
  }

  /** Applies migrations only (no background work). */
  async migrate(): Promise<void> {
    await this.database.migrate();
  }

  /** Joins the leadership election; the background duties run while this console leads. Idempotent,
   * and a no-op after stop(). */
  async start(): Promise<void> {
    if (this.phase !== "idle") return;
    this.phase = "started";
    try {
      // Replicas an older console created without a home LB get their region's default now.
      await assignDefaultHomes(this.store, SYSTEM_CONSOLE);
      await this.experiments.recoverInterrupted();
    } catch (error) {
      // Not started: the next getRuntime({ start: true }) tries again.
      if (this.phase === "started") this.phase = "idle";
      throw error;
    }
    // Stopped while reading: start nothing.
    if (this.phase !== "started") return;
    this.experiments.startSweeping();
    // Every console probes the LBs for its own pages; the monitor acts only while this one leads.
    this.health.start();
    this.leadership.start();
  }

  /** Stops the duties and leaves the election (a leader releases its lease, so another console
   * takes over at once). */
  async stop(): Promise<void> {
    const started = this.phase === "started";
    this.phase = "stopped";
    if (!started) return;
    this.stopDuties();
    this.health.stop();
    await this.experiments.stop().catch((error: unknown) => this.log.error({ err: error }, "experiments not marked interrupted"));
    await this.dutiesStarting;
    void this.lbClient.close();
    await this.leadership.stop();
  }

  /** The duties only the leader runs: TelemetryHub, TunerService, ConfigPublisher, the
   * HealthMonitor's actions (failover, failback, marks; it probes on every console), and the
   * reconcile that publishes what any console changed. */
  private startDuties(reconcileEveryMs: number): void {
    this.leading = true;
    const generation = ++this.dutiesGeneration;
    // Only the latest start goes on: one begun before a deposed-and-elected-again would otherwise run
    // to the end as well (leading is true again) and start a second reconcile timer that no stop clears.
    const current = () => this.leading && generation === this.dutiesGeneration;
    // A previous start waiting to retry a step ends now (no longer current) instead of holding this one up.
    this.dutiesRetry?.wake();
    const retry = new WakeSignal();
    this.dutiesRetry = retry;
    const steps: (() => void | Promise<void>)[] = [
      () => this.telemetry.start(),
      // Tuners first: they register for new config versions before the publisher's first pushes.
      () => this.tuners.start(),
      () => this.publisher.start(),
      () => {
        this.credentials.start();
        // A follower that changes the topology or a tuner records no config version (it does not
        // lead): the leader reloads tuners changed elsewhere, and records and pushes a version when
        // the built config differs (publish() compares contents).
        this.reconcileTimer = setInterval(() => this.reconcile(), reconcileEveryMs);
        this.reconcileTimer.unref();
      },
    ];
    const previous = this.dutiesStarting ?? Promise.resolve();
    // After a previous start finished (a quick deposed-and-elected-again); each step reads the
    // database, and a console deposed meanwhile stops at the next step. A step that fails (a dropped
    // PostgreSQL connection, SQLITE_BUSY) is tried again with backoff while this console leads: the
    // lease it keeps renewing keeps any other console from running the duties it lacks.
    const starting = previous.then(async () => {
      let failures = 0;
      for (let step = 0; step < steps.length; ) {
        if (!current()) return;
        try {
          await steps[step]?.();
          step += 1;
        } catch (error) {
          if (!current()) return;
          const retryInMs = backoffMs(failures, 500, 30_000);
          failures += 1;
          this.log.error({ err: error, failures, retryInMs }, "console duties failed to start; retrying");
          await retry.wait(retryInMs);
        }
      }
      this.log.info("console duties started (leader)");
    });
    this.dutiesStarting = starting.catch((error: unknown) => {
      this.log.error({ err: error }, "console duties failed to start");
    });
    // Deposed while starting: what started after the stop is stopped again.
    void this.dutiesStarting.then(() => {
      if (!this.leading) this.stopDuties();
    });
  }

  /** One reconcile round (a timer's: errors are logged; a round still running skips the next). */
  private reconcile(): void {
    if (this.reconciling) return;
    this.reconciling = true;
    (async () => {
      await this.tuners.reconcile();
      await this.publisher.publishAll();
    })()
      .catch((error: unknown) => {
        if (this.leading) this.log.error({ err: error }, "reconcile round failed");
      })
      .finally(() => {
        this.reconciling = false;
      });
  }

  private stopDuties(): void {
    this.leading = false;
    // A start waiting to retry a failed step gives up now (stop() awaits it).
    this.dutiesRetry?.wake();
    if (this.reconcileTimer) clearInterval(this.reconcileTimer);
    this.reconcileTimer = null;
    this.telemetry.stop();
    this.publisher.stop();
    this.credentials.stop();
    this.tuners.stop();
  }
}
