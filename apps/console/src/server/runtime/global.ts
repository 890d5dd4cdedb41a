// The process-wide runtime. Next may load this module in several bundles (instrumentation, route
// handlers) and re-evaluate it on HMR, so the instance lives on globalThis: one runtime, started once.
import "server-only";
import { hostname } from "node:os";
import pino from "pino";
import { createDatabase } from "@meridian/db";
import { autoFailbackAfterMs, getEnv } from "../../env";
import { ensureUsers } from "../auth/users";
import { seedDemoTopology } from "../demo/seed";
import { demoStateDir } from "../../lib/demo-files";
import consolePackage from "../../../package.json";
import { ConsoleRuntime } from "./runtime";

const KEY = Symbol.for("meridian.console.runtime");
type Holder = { [KEY]?: Promise<ConsoleRuntime> };

/** The runtime, created, migrated and seeded on first call; background services started when
 * `start` is true (instrumentation.ts starts them; route handlers only need the database). Opening
 * the store is asynchronous (PostgreSQL connects and migrates over the network), so the first call
 * creates a promise that every later call shares. A failed start is not cached: the next request
 * tries again (and reports the same error) instead of serving a half-built runtime. */
export async function getRuntime(options: { start?: boolean } = {}): Promise<ConsoleRuntime> {
  const holder = globalThis as Holder;
  let ready = holder[KEY];
  if (!ready) {
    ready = createRuntime();
    holder[KEY] = ready;
    ready.catch(() => {
      if (holder[KEY] === ready) delete holder[KEY];
    });
  }
  const runtime = await ready;
  if (options.start) await runtime.start();
  return runtime;
}

async function createRuntime(): Promise<ConsoleRuntime> {
  const env = getEnv();
  const log = pino({ level: env.LOG_LEVEL, base: { service: "console" } });
  const database = createDatabase({
    DATABASE_URL: env.DATABASE_URL,
    sqlitePath: env.dbPath,
    // A restarted PostgreSQL drops idle connections; the pool reconnects on the next query.
    onPoolError: (error) => log.warn({ err: error.message }, "PostgreSQL connection lost; reconnecting on the next query"),
  });
  const runtime = new ConsoleRuntime(
    database,
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
  try {
    await runtime.migrate();
    const users = await ensureUsers(runtime.store, { adminPassword: env.MERIDIAN_ADMIN_PASSWORD, viewerPassword: env.MERIDIAN_VIEWER_PASSWORD });
    if (users.viewerDisabled) log.info("the stored viewer is disabled: MERIDIAN_VIEWER_PASSWORD is not set (set it to enable the viewer)");
    if (env.MERIDIAN_DEMO) {
      await seedDemoTopology(runtime, { basePort: env.MERIDIAN_DEMO_BASE_PORT, tokenDir: demoStateDir(env.dbPath, env.MERIDIAN_DEMO_BASE_PORT) });
    }
  } catch (error) {
    await database.close().catch(() => undefined);
    throw error;
  }
  log.info({ db: database.location, store: database.dialect, demo: env.MERIDIAN_DEMO }, "console database ready");
  return runtime;
}
