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
// Usage: npm test [-- --unit-only]   (MERIDIAN_TEST_FILTER=substr narrows the node:test files)
// Exit code: 0 when nothing failed, 1 otherwise. A suite that crashes counts as one failure.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { ensureInstalled } from "./lib/ensure-install.mjs";
import { formatFailures, playwrightFailures, tapFailures } from "./lib/test-failures.mjs";

const root = join(fileURLToPath(import.meta.url), "..", "..");
const outDir = join(root, ".test-results");
mkdirSync(outDir, { recursive: true });
ensureInstalled(root);

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
/** Each failing test, for the digest above the last line. */
const failures = [];

const filter = process.env.MERIDIAN_TEST_FILTER;

// --- 0. house checks ----------------------------------------------------------------------
if (!filter) {
  for (const script of ["lint", "check:boundaries", "check:dead"]) {
    const startedAt = Date.now();
    const r = spawnSync("npm", ["run", "--silent", script], { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
    const seconds = ((Date.now() - startedAt) / 1000).toFixed(1);
    if (r.status === 0) {
      passed += 1;
      console.log(`[meridian] ✔ npm run ${script} (${seconds} s)`);
    } else {
      failed += 1;
      console.error(`[meridian] ✖ npm run ${script} failed (exit ${r.status}, ${seconds} s)`);
    }
  }
}

// --- 1. node:test -----------------------------------------------------------------------
/** Runs `files` under node:test (spec to stdout, TAP to .test-results/<tapName>) and adds the counts. */
function runNodeTests(files, tapName, extraEnv = {}) {
  const tap = join(outDir, tapName);
  const r = spawnSync(
    process.execPath,
    [
      // The console's server modules `import "server-only"`, which throws unless resolved under the
      // react-server condition (as Next does for server code); packages are unaffected by it.
      "--conditions=react-server",
      "--import",
      "tsx",
      "--test",
      "--test-concurrency=2",
      "--test-timeout=180000",
      "--test-reporter=spec",
      "--test-reporter-destination=stdout",
      "--test-reporter=tap",
      `--test-reporter-destination=${tap}`,
      ...files.map((f) => relative(root, f)),
    ],
    { cwd: root, stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, NODE_ENV: "test", ...extraEnv } },
  );
  const text = existsSync(tap) ? readFileSync(tap, "utf8") : "";
  const p = Number(/^# pass (\d+)/m.exec(text)?.[1] ?? NaN);
  const f = Number(/^# fail (\d+)/m.exec(text)?.[1] ?? NaN);
  if (Number.isNaN(p) || Number.isNaN(f)) {
    console.error(`[meridian] node:test (${tapName}) produced no summary (exit ${r.status}); counting one failure`);
    failed += 1;
  } else {
    passed += p;
    failed += f;
    failures.push(...tapFailures(text));
    if (f === 0 && r.status !== 0) {
      console.error(`[meridian] node:test (${tapName}) exited ${r.status} with no failed test; counting one failure`);
      failed += 1;
    }
  }
}

const nodeFiles = [join(root, "packages"), join(root, "apps"), join(root, "scripts")]
  .flatMap((d) => findTests(d, ".test.ts"))
  .filter((f) => !f.includes(`${join("apps", "console")}/e2e`))
  .filter((f) => !filter || f.includes(filter))
  .sort();
if (nodeFiles.length > 0) runNodeTests(nodeFiles, "node.tap");

// --- 1b. the console suites again, on PostgreSQL ---------------------------------------------
// Every console test file that runs on the test harness (a ConsoleRuntime on a fresh database)
// runs a second time with MERIDIAN_TEST_STORE=pg: each harness gets a fresh database on one real
// PostgreSQL server, started here (scripts/lib/test-postgres.ts) and stopped when the pass ends.
const consoleRoot = join(root, "apps", "console");
const pgFiles = nodeFiles.filter((f) => f.startsWith(consoleRoot) && readFileSync(f, "utf8").includes("testing/harness"));
if (pgFiles.length > 0) {
  const holder = spawn(process.execPath, ["--import", "tsx", join(root, "scripts", "lib", "test-postgres.ts")], {
    cwd: root,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const ready = await new Promise((resolve) => {
    createInterface({ input: holder.stdout }).once("line", (line) => resolve(JSON.parse(line)));
    holder.once("exit", () => resolve(null));
  });
  if (!ready) {
    console.error("[meridian] PostgreSQL did not start; the console suites' PostgreSQL pass counts one failure");
    failed += 1;
  } else {
    console.log(`[meridian] console suites on PostgreSQL (${pgFiles.length} files, server pid ${ready.pid})`);
    runNodeTests(pgFiles, "node-pg.tap", { MERIDIAN_TEST_STORE: "pg", MERIDIAN_TEST_PG_URL: ready.url });
  }
  holder.stdin.end();
  if (holder.exitCode === null) await new Promise((resolve) => holder.once("exit", resolve));
}

// --- 2. Playwright e2e --------------------------------------------------------------------
const specs = findTests(join(root, "e2e"), ".spec.ts");
if (specs.length > 0 && !process.argv.includes("--unit-only")) {
  const build = spawnSync("npm", ["run", "build"], { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
  if (build.status !== 0) {
    console.error("[meridian] build failed; e2e suite not run, counting one failure");
    failed += 1;
  } else {
    const json = join(outDir, "playwright.json");
    const r = spawnSync("npx", ["playwright", "test", "--reporter=list,json"], {
      cwd: root,
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, PLAYWRIGHT_JSON_OUTPUT_NAME: json },
    });
    let report = null;
    try {
      report = JSON.parse(readFileSync(json, "utf8"));
    } catch {
      report = null;
    }
    const stats = report?.stats ?? null;
    if (report) failures.push(...playwrightFailures(report));
    if (!stats) {
      console.error(`[meridian] playwright produced no report (exit ${r.status}); counting one failure`);
      failed += 1;
    } else {
      passed += (stats.expected ?? 0) + (stats.flaky ?? 0);
      failed += stats.unexpected ?? 0;
      if ((stats.unexpected ?? 0) === 0 && r.status !== 0) failed += 1;
    }
  }
}

if (failures.length > 0) console.log(`[meridian] failures:\n${formatFailures(failures)}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
