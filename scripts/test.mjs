#!/usr/bin/env node
// npm test: installs what is missing, then runs every suite and ends with one line
// "N passed, N failed".
//   0. the house checks, one passed/failed item each: `npm run lint` (Biome: lint + formatting),
//      `npm run check:boundaries` (dependency-cruiser: import rules, no cycles) and
//      `npm run check:dead` (knip: unused files, exports, dependencies). Skipped when
//      MERIDIAN_TEST_FILTER narrows the run.
//   1. unit + integration tests: node:test through tsx, every *.test.ts under packages/*,
//      apps/*/src and scripts/ (integration tests live in packages/*/test/); then the console's
//      suites that run on the test harness once more on a real PostgreSQL server (1b).
//   2. Playwright e2e (e2e/*.spec.ts) against the production console build, when e2e/ has specs.
// When something failed, a digest of the failures (name, location, first lines of the error; see
// lib/test-failures.mjs) is printed just above the last line.
// Counted as failed: every failing test, and every test that hit its time limit (node:test calls
// those, and a file stopped at the file limit, "cancelled"). The counts are node:test's own summary at
// the end of its TAP and Playwright's report stats; Playwright's errors outside any test (a spec file
// that throws on load, a webServer that does not start: then no test runs) are in the digest.
// Usage: npm test [-- --unit-only]   (MERIDIAN_TEST_FILTER=substr narrows the node:test files)
// Exit code: 0 when nothing failed, 1 otherwise; 130/143 when stopped by SIGINT/SIGTERM.
//
// Every step can fail only as counted failures, never by hanging the run or outliving it:
// - Each step runs in its own process group with a time limit (lib/run-step.mjs). A step past its
//   limit is stopped and counts one failure, and the summary line still comes (CI stops the whole
//   job at 90 min; a clean run takes ~18 min on 2 cores).
// - SIGINT/SIGTERM, or npm's death (lib/parent-watch.mjs), stop the running step and everything it
//   started, wait for it, then print the summary so far and exit non-zero.
// - A test file that exits before its tests finished fails (lib/exit-guard.mjs); one that leaves a
//   handle open does not keep node:test waiting (--test-force-exit for the files' processes, set by
//   lib/node-tests.mjs, which runs node:test as `node --test` does), and that forced exit loses none
//   of its verdicts on their way here (lib/exit-guard.mjs again).
// - The result files a summary is read from are deleted before their step, so a step that wrote none
//   counts one failure rather than reporting the previous run's numbers.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { ensureInstalled } from "./lib/ensure-install.mjs";
import { runUnderNpm, whenParentGone } from "./lib/parent-watch.mjs";
import { forwardSignals, formatDuration, interrupt, interrupted, runStep, signalExitCode, startStep } from "./lib/run-step.mjs";
import { formatFailures, playwrightFailures, playwrightSummary, tapFailures, tapSummary } from "./lib/test-failures.mjs";

// Read first thing: killing npm ends npm and its shell and passes no signal on (lib/parent-watch.mjs).
const startedUnder = process.ppid;
const root = join(fileURLToPath(import.meta.url), "..", "..");
const outDir = join(root, ".test-results");
mkdirSync(outDir, { recursive: true });
ensureInstalled(root);
forwardSignals();
// npm gone (killed, or a CI job's runner stopping it): stop the run as SIGTERM would, so that no
// step outlives it.
if (runUnderNpm()) whenParentGone(() => interrupt("SIGTERM"), { expectedParent: startedUnder });

const MIN = 60_000;
/** Time limits: generous (several times a step's clean duration on a loaded 2-core CI machine); they
 * exist to turn a hang into one failure. */
const LIMIT = { houseCheck: 10 * MIN, nodeTests: 40 * MIN, build: 20 * MIN, playwright: 40 * MIN };

const SKIP_DIRS = new Set(["node_modules", ".next", ".turbo", "dist", "data", ".git"]);
function findTests(dir, suffix, out = []) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    if (SKIP_DIRS.has(name)) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) findTests(p, suffix, out);
    else if (name.endsWith(suffix)) out.push(p);
  }
  return out;
}

let passed = 0;
let failed = 0;
/** Each failing test, and each step that failed as a whole, for the digest above the last line. */
const failures = [];

/** A step that failed as a whole (crashed, timed out, wrote no results): one failure, said at once and in the digest. */
function stepFailed(label, why) {
  failed += 1;
  console.error(`[meridian] ✖ ${label}: ${why}; counting one failure`);
  failures.push({ name: label, location: "", error: why });
}

/** Why a step's result cannot be read as a normal end (timed out, interrupted, not started), or null. */
function abnormalEnd(result, limitMs) {
  if (result.error) return `could not be started (${result.error.message})`;
  if (result.timedOut) return `timed out after ${formatDuration(limitMs)} and was stopped`;
  if (interrupted()) return `interrupted by ${interrupted()}`;
  return null;
}

const exitOf = (result) => result.signal ?? `exit ${result.code}`;

// --- 0. house checks ----------------------------------------------------------------------
async function houseChecks() {
  for (const script of ["lint", "check:boundaries", "check:dead"]) {
    if (interrupted()) return;
    const label = `npm run ${script}`;
    const startedAt = Date.now();
    const r = await runStep(label, "npm", ["run", "--silent", script], { cwd: root, timeoutMs: LIMIT.houseCheck });
    const seconds = ((Date.now() - startedAt) / 1000).toFixed(1);
    const abnormal = abnormalEnd(r, LIMIT.houseCheck);
    if (abnormal) stepFailed(label, abnormal);
    else if (r.code === 0) {
      passed += 1;
      console.log(`[meridian] ✔ ${label} (${seconds} s)`);
    } else stepFailed(label, `failed (${exitOf(r)}, ${seconds} s)`);
  }
}

// --- 1. node:test -----------------------------------------------------------------------
/** Runs `files` under node:test (spec to stdout, TAP to .test-results/<tapName>) and adds the counts. */
async function runNodeTests(files, tapName, extraEnv = {}) {
  const label = `node:test (${tapName})`;
  const tap = join(outDir, tapName);
  rmSync(tap, { force: true });
  const r = await runStep(
    label,
    process.execPath,
    [
      // The console's server modules `import "server-only"`, which throws unless resolved under the
      // react-server condition (as Next does for server code); packages are unaffected by it.
      "--conditions=react-server",
      "--import",
      "tsx",
      // A file whose process exits before its tests finished (process.exit(0) partway) fails, and a
      // file force-exited at its end loses none of its results on the way here.
      "--import",
      "./scripts/lib/exit-guard.mjs",
      "--test-concurrency=2",
      "--test-timeout=180000",
      // `node --test`, with --test-force-exit for the files' processes only: a file that leaves a
      // handle open (a server, a timer) ends once its tests have instead of keeping the run waiting
      // forever, and the TAP file is still complete (see lib/node-tests.mjs; Node >= 20.14).
      join(root, "scripts", "lib", "node-tests.mjs"),
      tap,
      ...files.map((f) => relative(root, f)),
    ],
    { cwd: root, env: { ...process.env, NODE_ENV: "test", ...extraEnv }, timeoutMs: LIMIT.nodeTests },
  );
  const abnormal = abnormalEnd(r, LIMIT.nodeTests);
  if (abnormal) return stepFailed(label, abnormal);
  const text = existsSync(tap) ? readFileSync(tap, "utf8") : "";
  // The run's own summary (its last lines), not a "# pass N" that a test printed earlier.
  const summary = tapSummary(text);
  if (!summary) return stepFailed(label, `produced no summary (${exitOf(r)})`);
  // A test past its time limit is "cancelled" to node:test, and failed here; the digest lists it too.
  const f = summary.fail + summary.cancelled;
  passed += summary.pass;
  failed += f;
  failures.push(...tapFailures(text));
  if (f === 0 && r.code !== 0) stepFailed(label, `${exitOf(r)} with no failed test`);
}

// --- 1b. the console suites again, on PostgreSQL ---------------------------------------------
// Every console test file that runs on the test harness (a ConsoleRuntime on a fresh database)
// runs a second time with MERIDIAN_TEST_STORE=pg: each harness gets a fresh database on one real
// PostgreSQL server, started here (scripts/lib/test-postgres.ts) and stopped when the pass ends.
async function runNodeTestsOnPostgres(pgFiles) {
  // A step like the others, so that a signal stops it too; its stdin closing is its normal stop. Its
  // limit only bounds a server that does not stop: it outlives the node:test pass by design.
  const label = "the PostgreSQL server for the console suites";
  const limit = LIMIT.nodeTests + 10 * MIN;
  const holder = startStep(label, process.execPath, ["--import", "tsx", join(root, "scripts", "lib", "test-postgres.ts")], {
    cwd: root,
    stdio: ["pipe", "pipe", "inherit"],
    timeoutMs: limit,
  });
  // Closing stdin of a holder that already exited (a signal stopped it) is EPIPE, not a crash.
  holder.child.stdin?.on("error", () => {});
  const ready = await new Promise((resolve) => {
    createInterface({ input: holder.child.stdout }).once("line", (line) => {
      try {
        resolve(JSON.parse(line));
      } catch {
        resolve(null);
      }
    });
    holder.child.once("exit", () => resolve(null));
  });
  if (!ready) {
    if (!interrupted()) stepFailed("console suites on PostgreSQL", "PostgreSQL did not start");
  } else if (!interrupted()) {
    console.log(`[meridian] console suites on PostgreSQL (${pgFiles.length} files, server pid ${ready.pid})`);
    await runNodeTests(pgFiles, "node-pg.tap", { MERIDIAN_TEST_STORE: "pg", MERIDIAN_TEST_PG_URL: ready.url });
  }
  holder.child.stdin?.end();
  const end = await holder.done;
  if (end.timedOut) stepFailed(label, `still running after ${formatDuration(limit)}; stopped`);
}

// --- 2. Playwright e2e --------------------------------------------------------------------
async function e2e() {
  const build = await runStep("npm run build", "npm", ["run", "build"], { cwd: root, timeoutMs: LIMIT.build });
  const abnormal = abnormalEnd(build, LIMIT.build);
  if (abnormal || build.code !== 0) return stepFailed("npm run build", `${abnormal ?? `failed (${exitOf(build)})`}; e2e suite not run`);
  if (interrupted()) return;
  // The console's database and the demo fleet's state for this run, removed after it (e2e/env.ts
  // uses the directory it is given; one given by the caller is the caller's to keep).
  const givenDataDir = process.env.MERIDIAN_E2E_DATA_DIR;
  const dataDir = givenDataDir || mkdtempSync(join(tmpdir(), "meridian-e2e-"));
  try {
    await runPlaywright(dataDir);
  } finally {
    if (!givenDataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

async function runPlaywright(dataDir) {
  const label = "playwright test";
  const json = join(outDir, "playwright.json");
  rmSync(json, { force: true });
  // Node on Playwright's CLI rather than npx, so the step's first process is Playwright itself and
  // the step ends only when Playwright, which stops its webServer last, has exited.
  const r = await runStep(label, process.execPath, [join(root, "node_modules", "@playwright", "test", "cli.js"), "test", "--reporter=list,json"], {
    cwd: root,
    env: { ...process.env, PLAYWRIGHT_JSON_OUTPUT_NAME: json, MERIDIAN_E2E_DATA_DIR: dataDir },
    timeoutMs: LIMIT.playwright,
    // SIGINT, whatever stopped npm test: on SIGINT Playwright stops its workers and then its webServer
    // (SIGTERM to start.mjs's process group, which stops the console and the demo fleet); SIGTERM
    // would end Playwright at once and leave the webServer, which has a process group of its own,
    // running. The grace covers that shutdown (gracefulShutdown: 10 s in playwright.config.ts).
    stopSignal: "SIGINT",
    graceMs: 60_000,
  });
  const abnormal = abnormalEnd(r, LIMIT.playwright);
  if (abnormal) return stepFailed(label, abnormal);
  let report = null;
  try {
    report = JSON.parse(readFileSync(json, "utf8"));
  } catch {
    report = null;
  }
  // Failing tests, then the errors outside any test (their cause when no test ran).
  if (report) failures.push(...playwrightFailures(report));
  const summary = playwrightSummary(report);
  if (!summary) return stepFailed(label, `produced no report (${exitOf(r)})`);
  passed += summary.passed;
  failed += summary.failed;
  if (summary.failed === 0 && r.code !== 0) stepFailed(label, `${exitOf(r)} with no failed test${summary.tests === 0 ? "; no test ran" : ""}`);
}

// --- the run --------------------------------------------------------------------------------
const filter = process.env.MERIDIAN_TEST_FILTER;
const nodeFiles = [join(root, "packages"), join(root, "apps"), join(root, "scripts")]
  .flatMap((d) => findTests(d, ".test.ts"))
  .filter((f) => !f.includes(`${join("apps", "console")}/e2e`))
  .filter((f) => !filter || f.includes(filter))
  .sort();
const consoleRoot = join(root, "apps", "console");
const pgFiles = nodeFiles.filter((f) => f.startsWith(consoleRoot) && readFileSync(f, "utf8").includes("testing/harness"));
const specs = findTests(join(root, "e2e"), ".spec.ts");

if (!filter) await houseChecks();
if (!interrupted() && nodeFiles.length > 0) await runNodeTests(nodeFiles, "node.tap");
if (!interrupted() && pgFiles.length > 0) await runNodeTestsOnPostgres(pgFiles);
if (!interrupted() && specs.length > 0 && !process.argv.includes("--unit-only")) await e2e();

if (failures.length > 0) console.log(`[meridian] failures:\n${formatFailures(failures)}`);
console.log(`${passed} passed, ${failed} failed`);
if (interrupted()) process.exit(signalExitCode(interrupted()));
process.exit(failed === 0 && passed > 0 ? 0 : 1);
