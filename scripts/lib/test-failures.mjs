// What npm test prints above its last line when something failed: each failing test's name, where
// it is and the first lines of its error, read from node:test's TAP and Playwright's JSON report,
// with Playwright's errors that belong to no test (a spec file that throws on load, a webServer that
// does not start). A CI log is often kept only from its tail, and the spec output that names the
// assertion is far above it; this digest puts the cause next to the count.
// Also the counts that last line adds up: node:test's own summary at the end of its TAP (tapSummary)
// and a Playwright report's stats (playwrightSummary).
// Plain ESM (no dependencies), imported by scripts/test.mjs.

const ERROR_LINES = 6;

/** Failing tests in node:test TAP text. A parent that failed only because a subtest did is left
 * out: the subtest is the failure. */
export function tapFailures(text) {
  const lines = text.split("\n");
  const failures = [];
  for (let i = 0; i < lines.length; i++) {
    const head = /^(\s*)not ok \d+ - (.*)$/.exec(lines[i]);
    if (!head) continue;
    const indent = `${head[1]}  `;
    const block = [];
    for (let j = i + 1; j < lines.length && lines[j].startsWith(indent) && lines[j].trim() !== "..."; j++) block.push(lines[j].slice(indent.length));
    if (block.some((line) => line.startsWith("failureType: 'subtestsFailed'"))) continue;
    failures.push({ name: head[2], location: unquote(field(block, "location")), error: errorOf(block) + howItExited(block) });
  }
  return failures;
}

/**
 * node:test's summary of a run, from the end of its TAP: pass, fail and cancelled counts, or null
 * when the TAP has none (cut short). Node 20 counts a test that hit its timeout, and a test file
 * stopped at the file limit, as cancelled, not failed. Only the lines after the last top-level plan
 * ("1..N") are read: node:test writes each line a test file prints as a "# <line>" comment, so a test
 * that prints "pass 500" puts a "# pass 500" line earlier in the TAP, never a plan line.
 */
export function tapSummary(text) {
  const lines = text.split("\n");
  const plan = lines.findLastIndex((line) => /^1\.\.\d+$/.test(line));
  if (plan < 0) return null;
  const tail = lines.slice(plan + 1);
  const count = (name) => {
    const line = tail.findLast((l) => new RegExp(`^# ${name} \\d+$`).test(l));
    return line === undefined ? Number.NaN : Number(line.slice(name.length + 3));
  };
  const [pass, fail, cancelled] = [count("pass"), count("fail"), count("cancelled")];
  if (Number.isNaN(pass) || Number.isNaN(fail)) return null;
  return { pass, fail, cancelled: Number.isNaN(cancelled) ? 0 : cancelled };
}

/** Failing tests in a Playwright JSON report (its suites nest; a test fails when its last result did
 * not pass and it was not expected to fail), then the report's errors that belong to no test: a spec
 * file that throws on load, a webServer or globalSetup that fails (Playwright then runs no test). */
export function playwrightFailures(report) {
  const failures = [];
  const visit = (suite) => {
    for (const child of suite.suites ?? []) visit(child);
    for (const spec of suite.specs ?? []) {
      for (const test of spec.tests ?? []) {
        if (test.status !== "unexpected") continue;
        const last = test.results?.at(-1);
        const message = last?.error?.message ?? last?.errors?.[0]?.message ?? "";
        failures.push({ name: spec.title, location: `${spec.file}:${spec.line}`, error: firstLines(message) });
      }
    }
  };
  for (const suite of report.suites ?? []) visit(suite);
  for (const error of report.errors ?? []) {
    const location = error.location ? `${error.location.file}:${error.location.line}` : "";
    failures.push({ name: "playwright, outside any test", location, error: firstLines(error.message ?? error.value ?? "") });
  }
  return failures;
}

/** A Playwright JSON report's counts: passed (expected + flaky), failed (unexpected) and tests, how
 * many it ran or skipped (0 when it stopped before any test); null when it has no stats. */
export function playwrightSummary(report) {
  const stats = report?.stats;
  if (!stats) return null;
  const n = (key) => stats[key] ?? 0;
  return { passed: n("expected") + n("flaky"), failed: n("unexpected"), tests: n("expected") + n("unexpected") + n("flaky") + n("skipped") };
}

/** The digest: one paragraph per failure. */
export function formatFailures(failures) {
  return failures.map((f) => [`✖ ${f.name}${f.location ? ` (${f.location})` : ""}`, ...f.error.split("\n").map((line) => `    ${line}`)].join("\n")).join("\n");
}

function field(block, name) {
  const line = block.find((l) => l.startsWith(`${name}: `));
  return line ? line.slice(name.length + 2) : "";
}

/** A test file whose process failed (node:test names the test after the file) carries its exit code
 * or signal; its error alone is only 'test failed'. */
function howItExited(block) {
  const code = field(block, "exitCode");
  const signal = unquote(field(block, "signal"));
  if (signal && signal !== "~") return ` (its process was killed by ${signal})`;
  if (code && code !== "~") return ` (its process exited with code ${code})`;
  return "";
}

function errorOf(block) {
  const start = block.findIndex((l) => l.startsWith("error: "));
  if (start < 0) return "";
  const inline = block[start].slice("error: ".length);
  if (inline !== "|-" && inline !== "|") return unquote(inline);
  const body = [];
  for (let k = start + 1; k < block.length && block[k].startsWith("  "); k++) body.push(block[k].slice(2));
  return body
    .filter((line) => line.trim() !== "")
    .slice(0, ERROR_LINES)
    .join("\n");
}

function unquote(value) {
  return value.startsWith("'") && value.endsWith("'") ? value.slice(1, -1).replaceAll("''", "'") : value;
}

function firstLines(message) {
  return stripAnsi(message).split("\n").slice(0, ERROR_LINES).join("\n");
}

function stripAnsi(text) {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escapes are control characters
  return text.replace(/\u001b\[[0-9;]*m/g, "");
}
