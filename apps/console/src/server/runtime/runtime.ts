// The composition root of the console's server: the database and the long-running services, each
// built here with the few collaborators it uses (its *Deps interface) and nothing more. Only entry
// points import this module: global.ts (route handlers, instrumentation.ts) and the tests' harness.
// Everything else sees the narrow ServiceRuntime (services/context.ts), which this class satisfies
// structurally (checked where global.ts and the harness hand it over; importing the interface here
// would point the root back at the services). Structure and wiring order: apps/console/README.md,
// "Runtime structure".
import "server-only";
import pino, { type Logger } from "pino";
import { migrate, type Db } from "@meridian/db";
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
  /** The tuner's trial-push rate limit and the clock it runs on (tests substitute a fake one). */
  minTrialPushIntervalMs?: number;
  tunerClock?: { now: () => number; setTimer: (fn: () => void, ms: number) => () => void };
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
  private started = false;

  constructor(
    readonly db: Db,
    readonly options: RuntimeOptions,
    readonly log: Logger = pino({ level: "silent" }),
  ) {
    // Built in dependency order: each component receives only components built before it, so no
    // component reaches another through this container.
    const lbClient = new LbAdminClient({ token: options.lbToken, timeoutMs: options.probeTimeoutMs ?? 2_000 });
    const publisher = new ConfigPublisher({ db, log, lbClient });
    const telemetry = new TelemetryHub({ db, log, lbClient });
    const failover = new FailoverService({ db, log, book: this.lbHealth, publisher });
    const autoFailback = new AutoFailback({ log, failover, healthyForMs: options.autoFailbackAfterMs ?? 0 });
    this.lbClient = lbClient;
    this.publisher = publisher;
    this.telemetry = telemetry;
    this.failover = failover;
    this.autoFailback = autoFailback;
    this.tuners = new TunerService({
      db,
      log,
      telemetry,
      publisher,
      ...(options.minTrialPushIntervalMs !== undefined ? { minTrialPushIntervalMs: options.minTrialPushIntervalMs } : {}),
      ...(options.tunerClock ?? {}),
    });
    this.health = new HealthMonitor({
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

  /** Starts the background services. Idempotent. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.experiments.recoverInterrupted();
    this.telemetry.start();
    // Tuners first: they register for new config versions before the publisher's first pushes.
    this.tuners.start();
    this.publisher.start();
    this.health.start();
    this.log.info("console services started");
  }

  stop(): void {
    if (!this.started) return;
    this.started = false;
    this.health.stop();
    this.telemetry.stop();
    this.publisher.stop();
    this.tuners.stop();
    this.experiments.stop();
    void this.lbClient.close();
  }
}
