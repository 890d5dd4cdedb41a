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
import { migrate, sqliteStore, type Db, type Store } from "@meridian/db";
import { DEFAULT_LEASE_TIMING, type LeaseTiming } from "../leadership/lease";
import { LeaderElector } from "../leadership/leader-elector";
import { AutoFailback } from "./auto-failback";
import { ConfigPublisher } from "./config-publisher";
import { defaultSimCommand, ExperimentRunner, type SimCommand } from "./experiment-runner";
import { FailoverService } from "./failover";
import { HealthMonitor } from "./health-monitor";
import { LbAdminClient } from "./lb-admin-client";
import { LbHealthBook } from "./lb-health";
import { ReplicaWarningLog } from "./replica-warnings";
import { TelemetryHub } from "./telemetry-hub";
import { TunerService } from "./tuner-service";

export interface RuntimeOptions {
  lbToken: string;
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
}

export class ConsoleRuntime {
  readonly lbClient: LbAdminClient;
  readonly lbHealth = new LbHealthBook();
  readonly publisher: ConfigPublisher;
  readonly health: HealthMonitor;
  readonly telemetry: TelemetryHub;
  readonly tuners: TunerService;
  readonly failover: FailoverService;
  readonly autoFailback: AutoFailback;
  readonly experiments: ExperimentRunner;
  readonly store: Store;
  readonly leadership: LeaderElector;
  private started = false;
  /** While this console leads: the timer that turns edits made on any console into config versions. */
  private reconcileTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly db: Db,
    readonly options: RuntimeOptions,
    readonly log: Logger = pino({ level: "silent" }),
  ) {
    // Built in dependency order: each component receives only components built before it, so no
    // component reaches another through this container.
    this.store = sqliteStore(db);
    const timing = options.leadership?.timing ?? DEFAULT_LEASE_TIMING;
    this.leadership = new LeaderElector({
      store: this.store,
      log,
      self: { id: options.leadership?.id ?? `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`, url: options.leadership?.url ?? null },
      timing,
      now: Date.now,
      onElected: () => this.startDuties(timing.renewEveryMs),
      onDeposed: () => this.stopDuties(),
    });
    // Before start() this runtime has no duties and no lease (a script, a test, the demo seed): it
    // records config versions unfenced (term 0), as a lone console always did. Once started, only
    // the leader records them, under its term.
    const leadership = { currentTerm: () => (this.started ? this.leadership.currentTerm() : 0) };
    const lbClient = new LbAdminClient({ token: options.lbToken, timeoutMs: options.probeTimeoutMs ?? 2_000 });
    const publisher = new ConfigPublisher({ db, log, lbClient, leadership });
    const telemetry = new TelemetryHub({ db, log, lbClient });
    const failover = new FailoverService({ db, log, book: this.lbHealth, publisher });
    const autoFailback = new AutoFailback({ log, failover, healthyForMs: options.autoFailbackAfterMs ?? 0 });
    this.lbClient = lbClient;
    this.publisher = publisher;
    this.telemetry = telemetry;
    this.failover = failover;
    this.autoFailback = autoFailback;
    this.tuners = new TunerService({ db, log, telemetry, publisher, leadership });
    this.health = new HealthMonitor({
      acting: () => this.leadership.currentTerm() !== null,
      db,
      log,
      lbClient,
      book: this.lbHealth,
      publisher,
      telemetry,
      failover,
      autoFailback,
      replicaWarnings: new ReplicaWarningLog(log),
      intervalMs: options.healthIntervalMs,
      failoverAfter: options.failoverAfter,
      autoFailover: options.autoFailover,
    });
    this.experiments = new ExperimentRunner({
      db,
      repoRoot: options.repoRoot,
      simCommand: options.simCommand ?? defaultSimCommand(options.repoRoot),
      traceDirs: options.traceDirs,
    });
  }

  /** Applies migrations only (no background work). */
  migrate(): void {
    migrate(this.db);
  }

  /** Joins the leadership election; the background duties run while this console leads. Idempotent. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.experiments.recoverInterrupted();
    // Every console probes the LBs for its own pages; the monitor acts only while this one leads.
    this.health.start();
    this.leadership.start();
  }

  /** Stops the duties and leaves the election (a leader releases its lease, so another console
   * takes over at once). */
  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    this.stopDuties();
    this.health.stop();
    this.experiments.stop();
    void this.lbClient.close();
    await this.leadership.stop();
  }

  /** The duties only the leader runs: TelemetryHub, TunerService, ConfigPublisher, the
   * HealthMonitor's actions (failover, failback, marks; it probes on every console), and the
   * reconcile that publishes what any console changed. */
  private startDuties(reconcileEveryMs: number): void {
    this.telemetry.start();
    // Tuners first: they register for new config versions before the publisher's first pushes.
    this.tuners.start();
    this.publisher.start();
    // A follower that changes the topology or a tuner records no config version (it does not lead):
    // the leader reloads tuners changed elsewhere, and records and pushes a version when the built
    // config differs (publish() compares contents).
    this.reconcileTimer = setInterval(() => {
      this.tuners.reconcile();
      this.publisher.publishAll();
    }, reconcileEveryMs);
    this.reconcileTimer.unref();
    this.log.info("console duties started (leader)");
  }

  private stopDuties(): void {
    if (this.reconcileTimer) clearInterval(this.reconcileTimer);
    this.reconcileTimer = null;
    this.telemetry.stop();
    this.publisher.stop();
    this.tuners.stop();
  }
}
