// What every service function receives: the database and the parts of the live services that the
// services call, nothing more. ConsoleRuntime (runtime/runtime.ts, the composition root) satisfies
// it; services never import the root, so the root can import them without a cycle.
import "server-only";
import type { Db } from "@meridian/db";
import type { AutoFailback } from "../runtime/auto-failback";
import type { ConfigPublisher } from "../runtime/config-publisher";
import type { EntrypointResolver } from "../runtime/entrypoint-resolver";
import type { ExperimentRunner } from "../runtime/experiment-runner";
import type { FailoverService } from "../runtime/failover";
import type { LbHealthBook } from "../runtime/lb-health";
import type { TelemetryHub } from "../runtime/telemetry-hub";
import type { TunerService } from "../runtime/tuner-service";

export interface ServiceRuntime {
  readonly db: Db;
  readonly lbHealth: Pick<LbHealthBook, "lb" | "replica" | "forget">;
  readonly publisher: Pick<ConfigPublisher, "publish" | "publishAll" | "forget" | "status">;
  readonly telemetry: Pick<TelemetryHub, "sync" | "stats" | "status">;
  readonly tuners: Pick<TunerService, "ensure" | "forget" | "describe" | "startTuning" | "stopTuning" | "reset" | "setManual" | "updateSettings">;
  readonly failover: Pick<FailoverService, "failover" | "failback">;
  readonly autoFailback: Pick<AutoFailback, "dueAt">;
  readonly entrypoints: Pick<EntrypointResolver, "resolve">;
  readonly experiments: Pick<ExperimentRunner, "traces" | "start" | "list">;
}

/** The database or a transaction on it (both have the same query builders). */
export type DbLike = Pick<Db, "select" | "insert" | "update" | "delete">;
