// The process-wide runtime. Next may load this module in several bundles (instrumentation, route
// handlers) and re-evaluate it on HMR, so the instance lives on globalThis: one runtime, started once.
import "server-only";
import pino from "pino";
import { openDb } from "@meridian/db";
import { autoFailbackAfterMs, getEnv } from "../../env";
import { ensureUsers } from "../auth/users";
import { seedDemoTopology } from "../demo/seed";
import consolePackage from "../../../package.json";
import { ConsoleRuntime } from "./runtime";

const KEY = Symbol.for("meridian.console.runtime");
type Holder = { [KEY]?: ConsoleRuntime };

/** The runtime, created, migrated and seeded on first call; background services started when
 * `start` is true (instrumentation.ts starts them; route handlers only need the database). */
export function getRuntime(options: { start?: boolean } = {}): ConsoleRuntime {
  const holder = globalThis as Holder;
  let runtime = holder[KEY];
  if (!runtime) {
    const env = getEnv();
    const log = pino({ level: env.LOG_LEVEL, base: { service: "console" } });
    const db = openDb(env.dbPath);
    runtime = new ConsoleRuntime(
      db,
      {
        lbToken: env.MERIDIAN_LB_TOKEN,
        repoRoot: env.repoRoot,
        healthIntervalMs: env.MERIDIAN_HEALTH_INTERVAL_MS,
        failoverAfter: env.MERIDIAN_FAILOVER_AFTER,
        autoFailover: env.MERIDIAN_AUTO_FAILOVER,
        autoFailbackAfterMs: autoFailbackAfterMs(env),
        sessionTtlMs: env.MERIDIAN_SESSION_TTL_HOURS * 3_600_000,
        traceDirs: [`${env.repoRoot}/../shared/traces`],
        version: consolePackage.version,
      },
      log,
    );
    runtime.migrate();
    ensureUsers(db, { adminPassword: env.MERIDIAN_ADMIN_PASSWORD, viewerPassword: env.MERIDIAN_VIEWER_PASSWORD });
    if (env.MERIDIAN_DEMO) seedDemoTopology(runtime, { basePort: env.MERIDIAN_DEMO_BASE_PORT });
    log.info({ db: env.dbPath, demo: env.MERIDIAN_DEMO }, "console database ready");
    holder[KEY] = runtime;
  }
  if (options.start) runtime.start();
  return runtime;
}
