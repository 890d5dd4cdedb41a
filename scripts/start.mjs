#!/usr/bin/env node
// npm start: install → build → migrate → console on :3000 with the embedded demo fleet.
// Run:    npm start            (MERIDIAN_DEMO=0 npm start: the console only, for a real fleet)
// Prints: each step, each child's PID as it starts, the console URL and the demo credentials; the
//         children's logs, prefixed.
//
// Decisions
// - Plain Node ESM with no dependencies until ensureInstalled() has run (a fresh clone has none).
// - Build: `npm run build` (turbo: packages typecheck + next build), skipped when
//   apps/console/.next/BUILD_ID is newer than every source file; MERIDIAN_SKIP_BUILD=1 skips it always.
// - Migrate: one explicit step (scripts/lib/migrate.ts) so a bad database fails before the server
//   starts; the console's runtime also migrates at startup (idempotent).
// - The console runs as `next start` (node, not npx, so its PID is the server's). The demo fleet
//   is a separate process (scripts/demo-fleet.ts), started first so the console's first probes find
//   its LBs up; its clients wait for the console's entrypoint map. The console seeds the matching
//   topology into its database (MERIDIAN_DEMO=1).
// - Supervision (scripts/lib/supervisor.ts): a child that exits on its own is started again with
//   backoff (0.5 s doubling to 30 s); the others keep running. The data plane never depends on the
//   console: a console crash leaves the fleet serving, and the restarted console picks the fleet
//   up from its database. A child that exits 5 times in a row without ever staying up 10 s is a
//   setup error (a port in use, a bad environment): everything is stopped and start exits 1.
// - Secrets: the demo uses fixed, printed passwords unless MERIDIAN_ADMIN_PASSWORD /
//   MERIDIAN_VIEWER_PASSWORD are set; without the demo a missing admin password is generated and
//   printed once. Each LB has its own token, issued by the console (the demo's are written to the
//   demo state directory for the fleet); MERIDIAN_ENTRYPOINTS_TOKEN, the machine token the demo's
//   clients read the entrypoint map with, is generated per run when unset.
// - Ctrl-C (or SIGTERM) stops every child this script started, by PID (the demo fleet stops its own
//   engines and LBs), then exits. Under npm, so does npm's death: `kill <npm pid>` ends npm and its
//   shell without passing the signal on (scripts/lib/parent-watch.ts). Started by hand, the script
//   outlives its shell (nohup), as before.
//   If this script itself is killed outright (SIGKILL), its children get SIGTERM from the kernel
//   and stop as on Ctrl-C (scripts/lib/supervisor.ts starts them through setpriv --pdeathsig, on
//   Linux; elsewhere they keep running: stop them by the PIDs printed when they started).
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureInstalled } from "./lib/ensure-install.mjs";

const root = join(fileURLToPath(import.meta.url), "..", "..");
const consoleDir = join(root, "apps", "console");

function say(message) {
  process.stdout.write(`[meridian] ${message}\n`);
}

const flag = (name, fallback) => {
  const value = process.env[name];
  if (value === undefined || value === "") return fallback;
  return !["0", "false", "no"].includes(value.toLowerCase());
};

// --- 1. install ------------------------------------------------------------------------------
ensureInstalled(root);

// --- 2. build --------------------------------------------------------------------------------
const SKIP = new Set(["node_modules", ".next", ".turbo", "dist", "data", ".git", "test-results", "playwright-report"]);
function newestMtime(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const name of readdirSync(path)) {
    if (SKIP.has(name)) continue;
    newest = Math.max(newest, newestMtime(join(path, name)));
  }
  return newest;
}

function buildIsCurrent() {
  const buildId = join(consoleDir, ".next", "BUILD_ID");
  if (!existsSync(buildId)) return false;
  const built = statSync(buildId).mtimeMs;
  const sources = [join(root, "packages"), consoleDir, join(root, "package-lock.json"), join(root, "turbo.json")];
  return sources.every((source) => newestMtime(source) <= built);
}

if (flag("MERIDIAN_SKIP_BUILD", false)) {
  say("build skipped (MERIDIAN_SKIP_BUILD=1)");
} else if (buildIsCurrent()) {
  say("build is up to date");
} else {
  say("building (npm run build) ...");
  const build = spawnSync("npm", ["run", "build"], { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
  if (build.status !== 0) {
    say(`build failed (exit ${build.status})`);
    process.exit(1);
  }
}

// --- 3. environment --------------------------------------------------------------------------
const demo = flag("MERIDIAN_DEMO", true);
const port = Number(process.env.MERIDIAN_PORT || 3000);
// Loopback unless told otherwise: the demo's passwords are printed and fixed.
const host = process.env.MERIDIAN_HOST || "127.0.0.1";
const consoleUrl = `http://${host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host}:${port}`;
const basePort = Number(process.env.MERIDIAN_DEMO_BASE_PORT || 4100);
const generatedAdmin = !process.env.MERIDIAN_ADMIN_PASSWORD && !demo;
const env = {
  ...process.env,
  NODE_ENV: "production",
  // The machines this runs on reach only package registries; don't let Next try to phone home.
  NEXT_TELEMETRY_DISABLED: "1",
  MERIDIAN_PORT: String(port),
  MERIDIAN_DB_PATH: process.env.MERIDIAN_DB_PATH || "data/meridian.db",
  MERIDIAN_DEMO: demo ? "1" : "0",
  MERIDIAN_DEMO_BASE_PORT: String(basePort),
  MERIDIAN_ENTRYPOINTS_TOKEN: process.env.MERIDIAN_ENTRYPOINTS_TOKEN || randomBytes(18).toString("base64url"),
  MERIDIAN_ADMIN_PASSWORD: process.env.MERIDIAN_ADMIN_PASSWORD || (demo ? "meridian-admin" : randomBytes(12).toString("base64url")),
  MERIDIAN_VIEWER_PASSWORD: process.env.MERIDIAN_VIEWER_PASSWORD || (demo ? "meridian-viewer" : ""),
  MERIDIAN_CONSOLE_URL: consoleUrl,
};
if (!env.MERIDIAN_VIEWER_PASSWORD) delete env.MERIDIAN_VIEWER_PASSWORD;

// --- 4. migrate ------------------------------------------------------------------------------
const migrated = spawnSync(process.execPath, ["--import", "tsx", join(root, "scripts", "lib", "migrate.ts")], {
  cwd: root,
  env,
  stdio: ["ignore", "inherit", "inherit"],
});
if (migrated.status !== 0) process.exit(1);

// --- 5. console (+ demo fleet), supervised ----------------------------------------------------
// The supervisor is TypeScript; load it through tsx now that the dependencies are installed.
const { register } = await import("tsx/esm/api");
register();
const { Supervisor, DEFAULT_RESTART_POLICY } = await import("./lib/supervisor.ts");
const { runUnderNpm, whenParentGone } = await import("./lib/parent-watch.ts");

let stopping = false;
const seconds = (ms) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
const supervisor = new Supervisor(DEFAULT_RESTART_POLICY, (event) => {
  if (stopping) return;
  switch (event.kind) {
    case "started":
      say(`${event.name} ${event.restarts > 0 ? "restarted" : "started"} (pid ${event.pid})`);
      break;
    case "exited":
      say(`${event.name} exited (${event.signal ?? `code ${event.code}`}) after ${seconds(event.uptimeMs)}`);
      break;
    case "spawn-failed":
      say(`${event.name} could not be started: ${event.error}`);
      break;
    case "restart-scheduled":
      say(`restarting ${event.name} in ${seconds(event.delayMs)}${event.name === "console" && demo ? "; the demo fleet keeps serving" : ""}`);
      break;
    case "gave-up":
      say(`${event.name} exited ${event.failures} times in a row without staying up; stopping everything`);
      void stop(1);
      break;
  }
});

async function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  for (const name of supervisor.names()) {
    const status = supervisor.status(name);
    if (status?.running) say(`stopping ${name} (pid ${status.pid})`);
  }
  await supervisor.stop(8_000);
  process.exit(code);
}
process.once("SIGINT", () => void stop(0));
process.once("SIGTERM", () => void stop(0));
// Killing npm passes no signal on; without this, start.mjs and its children outlived it.
if (runUnderNpm()) {
  whenParentGone(() => {
    say("npm, which started this script, is gone; stopping everything");
    void stop(0);
  });
}

if (demo) {
  say(`starting the demo fleet (ports ${basePort + 1}-${basePort + 13})`);
  // Status 2 is the fleet's "cannot start" (a port in use): retrying would only repeat it.
  supervisor.add({
    name: "demo fleet",
    command: process.execPath,
    args: ["--import", "tsx", join(root, "scripts", "demo-fleet.ts")],
    cwd: root,
    env,
    fatalExitCodes: [2],
  });
}
const nextBin = join(root, "node_modules", "next", "dist", "bin", "next");
// The migrate step above printed where the data lives (a PostgreSQL URL without its password).
const dbLabel = env.DATABASE_URL ? "PostgreSQL at DATABASE_URL" : `db ${env.MERIDIAN_DB_PATH}`;
say(`starting the console on ${consoleUrl} (${dbLabel}${demo ? ", demo topology" : ""})`);
supervisor.add({ name: "console", command: process.execPath, args: [nextBin, "start", "-H", host, "-p", String(port)], cwd: consoleDir, env });

async function waitForHealth(timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !stopping) {
    try {
      const res = await fetch(`${consoleUrl}/api/health`);
      if (res.ok) return true;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  return false;
}

if (!(await waitForHealth(60_000))) {
  say("the console did not answer /api/health within 60 s");
  await stop(1);
} else {
  say("");
  say(`Meridian console: ${consoleUrl}`);
  say(
    `  operator: admin / ${demo && !process.env.MERIDIAN_ADMIN_PASSWORD ? env.MERIDIAN_ADMIN_PASSWORD : generatedAdmin ? `${env.MERIDIAN_ADMIN_PASSWORD} (generated; set MERIDIAN_ADMIN_PASSWORD to choose one)` : "(MERIDIAN_ADMIN_PASSWORD)"}`,
  );
  if (env.MERIDIAN_VIEWER_PASSWORD) {
    say(`  viewer:   viewer / ${demo && !process.env.MERIDIAN_VIEWER_PASSWORD ? env.MERIDIAN_VIEWER_PASSWORD : "(MERIDIAN_VIEWER_PASSWORD)"}`);
  }
  if (demo) {
    say(`  demo fleet: engines on ports ${basePort + 1}-${basePort + 6}, LBs on ${basePort + 11}-${basePort + 13}`);
    say("  each LB's token: LBs page (rotate or issue there); the demo LBs read theirs from the demo state directory");
  }
  say("Ctrl-C stops everything.");
}
