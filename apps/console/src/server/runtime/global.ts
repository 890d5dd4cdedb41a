// The process-wide runtime. Next may load this module in several bundles (instrumentation, route
// handlers) and re-evaluate it on HMR, so the instance lives on globalThis: one runtime, started once.
import "server-only";
import { hostname } from "node:os";
import pino from "pino";
import { openDb } from "@meridian/db";
import { autoFailbackAfterMs, getEnv } from "../../env";
import { ensureUsers } from "../auth/users";
import { seedDemoTopology } from "../demo/seed";
import { demoStateDir } from "../../lib/demo-files";
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
        entrypointsTokenSha256: env.MERIDIAN_ENTRYPOINTS_TOKEN ?? null,
        tokenGraceMs: env.MERIDIAN_LB_TOKEN_GRACE_S * 1000,
        repoRoot: env.repoRoot,
        healthIntervalMs: env.MERIDIAN_HEALTH_INTERVAL_MS,
        failoverAfter: env.MERIDIAN_FAILOVER_AFTER,
        autoFailover: env.MERIDIAN_AUTO_FAILOVER,
        autoFailbackAfterMs: autoFailbackAfterMs(env),
        sessionTtlMs: env.MERIDIAN_SESSION_TTL_HOURS * 3_600_000,
        traceDirs: [`${env.repoRoot}/../shared/traces`],
        leadership: {
          id: env.MERIDIAN_CONSOLE_ID,
          // What operators (and the other consoles' UI) are told to reach the leader at.
          url: env.MERIDIAN_PUBLIC_URL ?? `http://${hostname()}:${env.MERIDIAN_PORT}`,
          timing: { ttlMs: env.MERIDIAN_LEADER_LEASE_MS, renewEveryMs: env.MERIDIAN_LEADER_LEASE_MS / 4 },
        },
        version: consolePackage.version,
      },
      log,
    );
    runtime.migrate();
    ensureUsers(db, { adminPassword: env.MERIDIAN_ADMIN_PASSWORD, viewerPassword: env.MERIDIAN_VIEWER_PASSWORD });
    if (env.MERIDIAN_DEMO) {
      seedDemoTopology(runtime, { basePort: env.MERIDIAN_DEMO_BASE_PORT, tokenDir: demoStateDir(env.dbPath, env.MERIDIAN_DEMO_BASE_PORT) });
    }
    log.info({ db: env.dbPath, demo: env.MERIDIAN_DEMO }, "console database ready");
    holder[KEY] = runtime;
  }
  if (options.start) runtime.start();
  return runtime;
}
