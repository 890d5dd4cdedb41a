// The console's server runtime: the database and the long-running services, wired together.
// Created once per process (see global.ts); tests create their own with a temp DB and fake LBs.
import pino, { type Logger } from "pino";
import { migrate, type Db } from "@meridian/db";
import { AutoFailback } from "./auto-failback";
import { ConfigPublisher } from "./config-publisher";
import { ExperimentRunner, defaultSimCommand, type SimCommand } from "./experiment-runner";
import { FailoverService } from "./failover";
import { HealthMonitor } from "./health-monitor";
import { LbAdminClient } from "./lb-admin-client";
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
}

export class ConsoleRuntime {
  readonly lbClient: LbAdminClient;
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
    this.lbClient = new LbAdminClient(options.lbToken, options.probeTimeoutMs ?? 2_000);
    this.publisher = new ConfigPublisher(this);
    this.health = new HealthMonitor(this);
    this.telemetry = new TelemetryHub(this);
    this.tuners = new TunerService(this);
    this.failover = new FailoverService(this);
    this.autoFailback = new AutoFailback({ log, failover: this.failover, healthyForMs: options.autoFailbackAfterMs ?? 0 });
    this.experiments = new ExperimentRunner(this, options.simCommand ?? defaultSimCommand(options.repoRoot), options.traceDirs);
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
