// The console process's configuration: the only module that reads process.env (one validated env
// module per process; the variables are listed in apps/console/README.md). Parsed lazily, on first
// use, because `next build` imports route modules without the runtime env (a bad variable must fail
// the server, not the build).
import "server-only";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { z } from "zod";
import { isPostgresUrl } from "@meridian/db";
import { parseAllowedHosts } from "./server/auth/allowed-hosts";
import { parseTrustedProxies } from "./server/auth/trusted-proxies";

const flag = z.enum(["0", "1", "true", "false", "yes", "no"]).transform((value) => value === "1" || value === "true" || value === "yes");

const EnvSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("production"),
  /** SQLite file; relative paths resolve against the repository root. */
  MERIDIAN_DB_PATH: z.string().min(1).default("data/meridian.db"),
  MERIDIAN_PORT: z.coerce.number().int().min(1).max(65535).default(3000),
  /** Password of the "admin" operator; when unset an existing admin keeps its stored hash. */
  MERIDIAN_ADMIN_PASSWORD: z.string().min(1).optional(),
  /** Password of the read-only "viewer"; when unset there is no viewer (a stored one is disabled). */
  MERIDIAN_VIEWER_PASSWORD: z.string().min(1).optional(),
  /** Machine token /api/entrypoints accepts (replay clients, the demo's load generator). Only its
   * SHA-256 is kept: the console verifies it and never presents it. Unset: sessions and client keys. */
  MERIDIAN_ENTRYPOINTS_TOKEN: z
    .string()
    .min(16, { error: "MERIDIAN_ENTRYPOINTS_TOKEN must be at least 16 characters" })
    .transform((token) => createHash("sha256").update(token).digest("hex"))
    .optional(),
  /** Seconds an LB keeps accepting its previous token after a rotation. */
  MERIDIAN_LB_TOKEN_GRACE_S: z.coerce.number().int().min(0).max(86_400).default(60),
  /** Bearer token that reads the console's /metrics from anywhere (a Prometheus scraper); unset: only
   * loopback clients may read it. A read-only secret of its own: no LB token leaves the console. */
  MERIDIAN_METRICS_TOKEN: z.string().min(16, { error: "MERIDIAN_METRICS_TOKEN must be at least 16 characters" }).optional(),
  /** Seed the demo topology (the fleet itself is started by scripts/demo-fleet.ts). */
  MERIDIAN_DEMO: flag.default(false),
  MERIDIAN_DEMO_BASE_PORT: z.coerce.number().int().min(1).max(65000).default(4100),
  MERIDIAN_HEALTH_INTERVAL_MS: z.coerce.number().int().min(100).default(2000),
  /** Consecutive failed LB probes before an automatic failover. */
  MERIDIAN_FAILOVER_AFTER: z.coerce.number().int().min(1).default(3),
  MERIDIAN_AUTO_FAILOVER: flag.default(true),
  /** Seconds an LB that was failed over automatically must answer every probe before the console
   * fails it back on its own; 0 = never. Unset: DEMO_AUTO_FAILBACK_AFTER_S in the demo, else 0. */
  MERIDIAN_AUTO_FAILBACK_AFTER_S: z.coerce.number().min(0).optional(),
  MERIDIAN_SESSION_TTL_HOURS: z.coerce.number().positive().default(12),
  /** Reverse proxies whose X-Forwarded-For/-Host/-Proto are believed: IPs, CIDR blocks, "loopback".
   * Empty: none (the socket's peer is the client; the Host header names the console). */
  MERIDIAN_TRUSTED_PROXIES: z
    .string()
    .default("")
    .transform((text, ctx) => {
      try {
        return parseTrustedProxies(text);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
        return z.NEVER;
      }
    }),
  /** The URL browsers use to reach the console; when set, a mutation's Origin must be exactly its
   * origin (and the session cookie is Secure when it is https). */
  MERIDIAN_PUBLIC_URL: z
    .url({ protocol: /^https?$/, error: "MERIDIAN_PUBLIC_URL must be an http or https URL, e.g. https://console.example.com" })
    .transform((text) => new URL(text).origin)
    .optional(),
  /** Host names browsers may reach the console by, besides MERIDIAN_PUBLIC_URL's, "localhost" and IP
   * addresses (DNS-rebinding defence, server/auth/host-check.ts): comma-separated, no scheme or port. */
  MERIDIAN_ALLOWED_HOSTS: z
    .string()
    .default("")
    .transform((text, ctx) => {
      try {
        return parseAllowedHosts(text);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
        return z.NEVER;
      }
    }),
  /** The address or name `npm start` binds the console to (next start -H); a name is one the console
   * answers to (server/auth/allowed-hosts.ts boundHostNames). */
  MERIDIAN_HOST: z.string().optional(),
  /** PostgreSQL (postgres:// or postgresql://): the console's store, shared by every console on it
   * (one of them leads the background duties). Unset: SQLite at MERIDIAN_DB_PATH. */
  DATABASE_URL: z
    .string()
    .optional()
    .transform((url) => (url?.trim() ? url.trim() : undefined))
    .refine((url) => url === undefined || isPostgresUrl(url), {
      error: "DATABASE_URL must be a postgres:// or postgresql:// URL (unset it to use SQLite at MERIDIAN_DB_PATH)",
    }),
  /** Set by `npm start` (a random value per run): /api/health echoes it as `startNonce`, so that
   * start.mjs knows the console answering on its port is the one it started. */
  MERIDIAN_START_NONCE: z.string().min(1).optional(),
  /** This console's instance id in the leadership election; unset: host:pid:random. */
  MERIDIAN_CONSOLE_ID: z.string().min(1).optional(),
  /** How long the leader's lease lasts without renewal; the leader renews every quarter of it. A
   * killed leader is replaced within 1.25× this. */
  MERIDIAN_LEADER_LEASE_MS: z.coerce.number().int().min(400).default(6000),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});

export type ConsoleEnv = z.output<typeof EnvSchema> & { repoRoot: string; dbPath: string };

/** The demo's automatic failback period: long enough that one lucky probe does not count, short
 * enough to watch a killed LB come back within a minute. */
const DEMO_AUTO_FAILBACK_AFTER_S = 30;

/** Automatic failback, on by default only in the demo (a real fleet's operator opts in). */
export function autoFailbackAfterMs(env: Pick<ConsoleEnv, "MERIDIAN_AUTO_FAILBACK_AFTER_S" | "MERIDIAN_DEMO">): number {
  return (env.MERIDIAN_AUTO_FAILBACK_AFTER_S ?? (env.MERIDIAN_DEMO ? DEMO_AUTO_FAILBACK_AFTER_S : 0)) * 1000;
}

/** The repository root: the nearest ancestor of the working directory holding turbo.json
 * (`next start` runs in apps/console, scripts run at the root). */
export function findRepoRoot(from: string = process.cwd()): string {
  // turbopackIgnore: runtime paths, not files the server bundle needs traced.
  for (let dir = resolve(/*turbopackIgnore: true*/ from); ; dir = dirname(dir)) {
    if (existsSync(join(/*turbopackIgnore: true*/ dir, "turbo.json"))) return dir;
    if (dirname(dir) === dir) return resolve(/*turbopackIgnore: true*/ from);
  }
}

/** The variables that are set. `NAME=` in an env file or a compose file means "not set" to an
 * operator, and so it does here, as in scripts/start.mjs: coerced, an empty value became 0 (no
 * token grace, no automatic failback) or false (automatic failover off) instead of the default. */
function setVariables(source: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(source).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1].trim() !== ""));
}

let cached: ConsoleEnv | undefined;

/** Validates an environment; throws one Error listing every problem. Exported for tests. */
export function parseConsoleEnv(source: Record<string, string | undefined>): ConsoleEnv {
  const result = EnvSchema.safeParse(setVariables(source));
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("; ");
    throw new Error(`invalid console environment: ${problems}`);
  }
  const repoRoot = findRepoRoot();
  const dbPath = isAbsolute(result.data.MERIDIAN_DB_PATH)
    ? result.data.MERIDIAN_DB_PATH
    : join(/*turbopackIgnore: true*/ repoRoot, result.data.MERIDIAN_DB_PATH);
  return { ...result.data, repoRoot, dbPath };
}

export function getEnv(): ConsoleEnv {
  cached ??= parseConsoleEnv(process.env);
  return cached;
}
