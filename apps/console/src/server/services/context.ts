// What every service function receives: the database and the parts of the live services that the
// services call, nothing more. ConsoleRuntime (runtime/runtime.ts, the composition root) satisfies
// it; services never import the root, so the root can import them without a cycle.
import "server-only";
import type { Logger } from "pino";
import type { Store } from "@meridian/db";
import type { AutoFailback } from "../runtime/auto-failback";
import type { ConfigPublisher } from "../runtime/config-publisher";
import type { CredentialKeeper } from "../runtime/credential-keeper";
import type { EntrypointResolver } from "../runtime/entrypoint-resolver";
import type { ExperimentRunner } from "../runtime/experiment-runner";
import type { FailoverService } from "../runtime/failover";
import type { LbHealthBook } from "../runtime/lb-health";
import type { LbProofBook } from "../runtime/lb-proofs";
import type { TelemetryHub } from "../runtime/telemetry-hub";
import type { TunerService } from "../runtime/tuner-service";

export interface ServiceRuntime {
  /** The console's database (SQLite or PostgreSQL): services query `store.db` with `store.tables`,
   * and write through `store.transaction` when a change spans rows. */
  readonly store: Store;
  /** Where a follow-up that failed after an operator's change committed is reported (after-commit.ts). */
  readonly log: Logger;
  readonly lbHealth: Pick<LbHealthBook, "lb" | "replica" | "forget">;
  readonly publisher: Pick<ConfigPublisher, "publish" | "publishAll" | "forget" | "status">;
  readonly telemetry: Pick<TelemetryHub, "sync" | "stats" | "status">;
  readonly tuners: Pick<
    TunerService,
    "ensure" | "forget" | "describe" | "startTuning" | "stopTuning" | "reset" | "setManual" | "updateSettings" | "scope" | "setScope"
  >;
  readonly failover: Pick<FailoverService, "failover" | "failback">;
  readonly autoFailback: Pick<AutoFailback, "dueAt">;
  readonly entrypoints: Pick<EntrypointResolver, "resolve">;
  readonly experiments: Pick<ExperimentRunner, "traces" | "start" | "list">;
  readonly lbProofs: Pick<LbProofBook, "get" | "forget">;
  readonly credentials: Pick<CredentialKeeper, "wake" | "rotationStatus">;
  /** A new LB token (256 random bits; tests may fix it). */
  newLbToken(): string;
}
