#!/usr/bin/env node
// npm start: install → build → migrate → console on :3000 with the embedded demo fleet.
// Run:    npm start            (MERIDIAN_DEMO=0 npm start: the console only, for a real fleet)
// Prints: each step, each child's PID as it starts, the console URL and the demo credentials; the
//         children's logs, prefixed.
// Exits:  2 at once, touching nothing, on a bad setting (MERIDIAN_PORT, MERIDIAN_DEMO_BASE_PORT),
//         another `npm start` in this checkout that is still starting up (installing, building,
//         migrating), a console port in use, or a demo fleet that already uses this run's state
//         directory (a second `npm start` on the same data); 1 when a step fails or a child never
//         stays up.
//
// Decisions
// - Plain Node ESM with no dependencies until the install step has run (a fresh clone has none).
// - Build: `npm run build` (turbo: packages typecheck + next build), skipped when the last build
//   that finished was built from the source files as they are now (apps/console/.next/.meridian-build-ok,
//   written only after the build exited 0, holds a fingerprint of the sources' paths, sizes and
//   mtimes taken when it started; no clock is trusted: scripts/lib/build-marker.mjs);
//   MERIDIAN_SKIP_BUILD=1 skips it always.
// - The steps (install, build, migrate) run as child processes that can be stopped
//   (scripts/lib/steps.mjs): Ctrl-C, SIGTERM or npm's death during a step stops it and everything it
//   started, and start.mjs exits. (A step outlives a SIGKILL of start.mjs: it runs to its end; an
//   unfinished build is not taken for a finished one.)
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
// - One start-up at a time per checkout: the run takes `<checkout>/.meridian-start.lock` first thing
//   and holds it until its console answers (or it exits), so a second run started meanwhile exits 2
//   before it installs or builds: it would otherwise build into the same .next directory while the
//   first one builds or is about to serve it, and it passes the port and fleet checks below because
//   the first run holds neither yet. The lock names this process and its start time; one left by a
//   run killed outright (a dead PID, a reused one, or our own PID given again after a container
//   restart) is replaced (scripts/lib/fleet-lock.core.mjs, as for the demo fleet's lock). It also
//   says which step the run is in and since when, and a refused run prints that: once in CI a run
//   was refused 3.5 min after the first one's console answered, and the message named only a PID.
//   The wait for the console bounds each probe on its own timer (scripts/lib/console-health.ts), so
//   the lock is released when the console answers, or the run stops, within the wait's 60 s.
// - One run per console port and per demo state directory: the console's port must be free before
//   the install, and no live demo fleet may hold the state directory's lock before the build
//   (scripts/lib/fleet-lock.ts; the fleet takes it itself, this only looks first so that a second
//   run touches nothing: a build would rewrite the .next directory the first run serves from). Both
//   are checked again before the migrate step.
// - Ready means the console this run started answers /api/health: it echoes MERIDIAN_START_NONCE,
//   random per run, so another server on the port cannot pass for it (scripts/lib/console-health.ts).
//   Each probe times out after 2 s.
// - Ctrl-C (or SIGTERM) stops every child this script started, by PID (the demo fleet stops its own
//   engines and LBs), then exits, from the first step on. Under npm, so does npm's death: `kill <npm
//   pid>` ends npm and its shell without passing the signal on (scripts/lib/parent-watch.mjs, which
//   compares with the parent read first thing). Started by hand, the script outlives its shell
//   (nohup), as before.
//   If this script itself is killed outright (SIGKILL), its children get SIGTERM from the kernel
//   and stop as on Ctrl-C (scripts/lib/supervisor.ts starts them through setpriv --pdeathsig, on
//   Linux; elsewhere they keep running: stop them by the PIDs printed when they started).
import { randomBytes } from "node:crypto";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { buildIsCurrent, clearBuildMarker, sourceFingerprint, writeBuildMarker } from "./lib/build-marker.mjs";
import { installStep } from "./lib/ensure-install.mjs";
import { acquirePidLock } from "./lib/fleet-lock.core.mjs";
import { runUnderNpm, whenParentGone } from "./lib/parent-watch.mjs";
import { portIsFree, readPortEnv } from "./lib/ports.mjs";
import { formatDuration } from "./lib/run-step.mjs";
import { StepRunner } from "./lib/steps.mjs";

// The parent this script started under (npm, or npm's shell), read before anything else: read after
// a step that took minutes, it may already be init's, and the parent watch would never fire.
const startedUnder = process.ppid;

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

// --- 0. settings, checked before anything runs ---------------------------------------------------
let port;
let basePort;
try {
  port = readPortEnv(process.env, "MERIDIAN_PORT", 3000);
  // The console and the fleet accept base ports up to 65000 (the fleet's ports are BASE+1..BASE+13).
  basePort = readPortEnv(process.env, "MERIDIAN_DEMO_BASE_PORT", 4100, 65000);
} catch (error) {
  say(error.message);
  process.exit(2);
}

// --- one start-up at a time in this checkout -----------------------------------------------------
/** `prefix` + how long ago the ISO time `iso` was, and when (UTC); "" without a time. */
function ago(iso, prefix) {
  const at = Date.parse(iso ?? "");
  return Number.isNaN(at) ? "" : `${prefix}${formatDuration(Math.max(0, Date.now() - at))} (since ${new Date(at).toISOString()})`;
}
const runLockPath = join(root, ".meridian-start.lock");
let runLock = null;
try {
  // The marker is what this script's command line contains (`node scripts/start.mjs`).
  const attempt = acquirePidLock(runLockPath, { marker: "start.mjs" });
  if (!attempt.ok) {
    say(`another npm start (pid ${attempt.holder}${ago(attempt.since, ", holding the lock for ")}) is starting up in this checkout (${runLockPath})`);
    // Its own words, written as it went (a lock from an older start.mjs has none).
    say(attempt.doing ? `  it is ${attempt.doing}${ago(attempt.doingSince, ", for ")}` : "  (installing, building or migrating)");
    say("  wait until its console answers, or stop it");
    process.exit(2);
  }
  runLock = attempt.lock;
  runLock.note("checking its settings and the console port");
} catch (error) {
  say(`cannot take ${runLockPath}: ${error.message}`);
  process.exit(1);
}
// Every way out (process.exit, an uncaught error) releases it; SIGKILL leaves a lock the next run replaces.
process.on("exit", () => runLock?.release());

// --- stopping, from the first step on ------------------------------------------------------------
const steps = new StepRunner();
/** The console and demo fleet's supervisor, once they run. */
let supervisor = null;
let stopping = false;

async function stop(code, why) {
  if (stopping) return;
  stopping = true;
  if (why) say(why);
  runLock?.note(`stopping everything${why ? `: ${why}` : ""}`);
  await steps.stop(8_000);
  if (supervisor) {
    for (const name of supervisor.names()) {
      const status = supervisor.status(name);
      if (status?.running) say(`stopping ${name} (pid ${status.pid})`);
    }
    await supervisor.stop(8_000);
  }
  process.exit(code);
}
process.once("SIGINT", () => void stop(0));
process.once("SIGTERM", () => void stop(0));
// Killing npm passes no signal on; without this, start.mjs and its children outlived it.
if (runUnderNpm()) {
  whenParentGone(() => void stop(0, "npm, which started this script, is gone; stopping everything"), { expectedParent: startedUnder });
}

/** Ends the run before anything was started that would need stopping. */
function fail(message, code) {
  say(message);
  process.exit(code);
}

const outcome = (result) => result.error ?? (result.signal ? `killed by ${result.signal}` : `exit ${result.code}`);

try {
  await main();
} catch (error) {
  say(error instanceof Error ? error.message : String(error));
  await stop(1);
}

async function main() {
  const demo = flag("MERIDIAN_DEMO", true);
  // Loopback unless told otherwise: the demo's passwords are printed and fixed.
  const host = process.env.MERIDIAN_HOST || "127.0.0.1";
  // A second `npm start` stops here (or at the run lock, while the first is starting up), before it
  // installs or builds anything: a build would rewrite the .next directory that the first console
  // serves from. (Checked again before the console starts.)
  if (!(await portIsFree(host, port))) fail(`port ${port} is in use; set MERIDIAN_PORT`, 2);

  // --- 1. install ------------------------------------------------------------------------------
  const install = installStep(root);
  if (install) {
    say(`installing dependencies (${install.label}) ...`);
    runLock.note(`installing dependencies (${install.label})`);
    const installed = await steps.run(install.command, install.args, { cwd: root, env: install.env, stdio: ["ignore", 2, 2] });
    if (installed.stopped) return;
    if (installed.code !== 0) fail(`${install.label} failed (${outcome(installed)})`, 1);
    install.finish();
  }

  // The rest is TypeScript; load it through tsx now that the dependencies are installed.
  const { register } = await import("tsx/esm/api");
  register();
  const { Supervisor, DEFAULT_RESTART_POLICY } = await import("./lib/supervisor.ts");
  const { lockHolder } = await import("./lib/fleet-lock.ts");
  const { waitForConsole } = await import("./lib/console-health.ts");
  const { demoStateDir } = await import("../apps/console/src/lib/demo-files.ts");
  if (stopping) return;
  const dbPath = process.env.MERIDIAN_DB_PATH || "data/meridian.db";
  /** This run's demo state directory is not another fleet's (that run is left alone). */
  const requireFreeFleetState = () => {
    if (!demo) return;
    const stateDir = demoStateDir(resolve(root, dbPath), basePort);
    const holder = lockHolder(stateDir);
    if (holder !== null) {
      fail(`a demo fleet (pid ${holder}) already uses ${stateDir}; stop it, or set another MERIDIAN_DB_PATH or MERIDIAN_DEMO_BASE_PORT`, 2);
    }
  };
  requireFreeFleetState();

  // --- 2. build --------------------------------------------------------------------------------
  const nextDir = join(consoleDir, ".next");
  const sources = [join(root, "packages"), consoleDir, join(root, "package-lock.json"), join(root, "turbo.json")];
  if (flag("MERIDIAN_SKIP_BUILD", false)) {
    say("build skipped (MERIDIAN_SKIP_BUILD=1)");
  } else {
    // Taken before the build starts: a file saved while it runs may not be in it.
    const fingerprint = sourceFingerprint(sources);
    if (buildIsCurrent(nextDir, fingerprint)) {
      say("build is up to date");
    } else {
      say("building (npm run build) ...");
      runLock.note("building (npm run build)");
      // From here until the build exits 0, the output in .next is not a build to run.
      clearBuildMarker(nextDir);
      const built = await steps.run("npm", ["run", "build"], { cwd: root });
      if (built.stopped) return;
      if (built.code !== 0) fail(`build failed (${outcome(built)})`, 1);
      writeBuildMarker(nextDir, fingerprint);
    }
  }

  // --- 3. environment --------------------------------------------------------------------------
  // An IPv6 literal goes in brackets in a URL (http://[::1]:3000).
  const urlHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  const consoleUrl = `http://${urlHost}:${port}`;
  const generatedAdmin = !process.env.MERIDIAN_ADMIN_PASSWORD && !demo;
  // /api/health echoes it: an answer without it comes from some other server on the port.
  const startNonce = randomBytes(12).toString("base64url");
  const env = {
    ...process.env,
    NODE_ENV: "production",
    // The machines this runs on reach only package registries; don't let Next try to phone home.
    NEXT_TELEMETRY_DISABLED: "1",
    MERIDIAN_PORT: String(port),
    MERIDIAN_DB_PATH: dbPath,
    MERIDIAN_DEMO: demo ? "1" : "0",
    MERIDIAN_DEMO_BASE_PORT: String(basePort),
    MERIDIAN_ENTRYPOINTS_TOKEN: process.env.MERIDIAN_ENTRYPOINTS_TOKEN || randomBytes(18).toString("base64url"),
    MERIDIAN_ADMIN_PASSWORD: process.env.MERIDIAN_ADMIN_PASSWORD || (demo ? "meridian-admin" : randomBytes(12).toString("base64url")),
    MERIDIAN_VIEWER_PASSWORD: process.env.MERIDIAN_VIEWER_PASSWORD || (demo ? "meridian-viewer" : ""),
    MERIDIAN_CONSOLE_URL: consoleUrl,
    MERIDIAN_START_NONCE: startNonce,
  };
  if (!env.MERIDIAN_VIEWER_PASSWORD) delete env.MERIDIAN_VIEWER_PASSWORD;

  // --- 4. this run's console port and demo state directory are still free -----------------------
  // Checked before the install too; a run started during this one's build is caught here.
  requireFreeFleetState();
  if (!(await portIsFree(host, port))) fail(`port ${port} is in use; set MERIDIAN_PORT`, 2);
  if (stopping) return;

  // --- 5. migrate ------------------------------------------------------------------------------
  // Said first: a PostgreSQL server that accepts connections and never answers takes up to the
  // pool's connection timeout to fail, and silence would look like a hang.
  // Where the data lives (a PostgreSQL URL without its password).
  const dbLabel = env.DATABASE_URL ? "PostgreSQL at DATABASE_URL" : `db ${env.MERIDIAN_DB_PATH}`;
  say(`migrating ${dbLabel} ...`);
  runLock.note(`migrating ${dbLabel}`);
  const migrated = await steps.run(process.execPath, ["--import", "tsx", join(root, "scripts", "lib", "migrate.ts")], { cwd: root, env });
  if (migrated.stopped) return;
  if (migrated.code !== 0) fail(`migrate failed (${outcome(migrated)})`, 1);

  // --- 6. console (+ demo fleet), supervised ----------------------------------------------------
  const seconds = (ms) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  supervisor = new Supervisor(DEFAULT_RESTART_POLICY, (event) => {
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
        void stop(
          1,
          event.fatal
            ? `${event.name} cannot start (exit 2: a bad setting, named in its log above); stopping everything`
            : `${event.name} exited ${event.failures} times in a row without staying up; stopping everything`,
        );
        break;
    }
  });

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
  say(`starting the console on ${consoleUrl} (${dbLabel}${demo ? ", demo topology" : ""})`);
  // Status 2 is the console's "invalid environment" (instrumentation-node.ts): a restart would repeat it.
  supervisor.add({
    name: "console",
    command: process.execPath,
    args: [nextBin, "start", "-H", host, "-p", String(port)],
    cwd: consoleDir,
    env,
    fatalExitCodes: [2],
  });

  runLock.note(`waiting for its console (pid ${supervisor.status("console")?.pid ?? "?"}) to answer ${consoleUrl}/api/health`);
  const { answer, otherAnswered } = await waitForConsole(consoleUrl, startNonce, { withinMs: 60_000, stopped: () => stopping });
  // Ctrl-C, npm's death or a child given up on while waiting: stop() says what happens.
  if (stopping) return;
  if (answer !== "ours") {
    const why = otherAnswered
      ? `; something else answered it on port ${port} (another server, or a console built before this checkout: run without MERIDIAN_SKIP_BUILD)`
      : "";
    await stop(1, `the console did not answer /api/health within 60 s${why}`);
    return;
  }
  // Started up: another run in this checkout may now get as far as the port and fleet checks.
  runLock.release();
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
