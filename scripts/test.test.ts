// npm test's counts and digest when tests fail in ways that are not a plain failing assertion: a test
// past its time limit (node:test: "cancelled"), a test that prints lines like node:test's summary, a
// Playwright spec file that throws on load (Playwright then runs no test at all). The last test runs
// scripts/test.mjs itself on fake suites in a temporary copy of the repository layout (~5 s).
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { formatFailures, playwrightFailures, playwrightSummary, tapSummary } from "./lib/test-failures.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

test("the TAP summary is node:test's own, read after the last plan line, with timed-out tests as cancelled", () => {
  // What node:test (Node 20) writes for a file that prints "pass 500" / "fail 0", then two tests that
  // timed out and one failure; the summary is the last block.
  const tap = `TAP version 13
# Subtest: prints something
# pass 500
# fail 0
# 1..9
ok 1 - prints something
  ---
  duration_ms: 0.5
  ...
# Subtest: hangs past its timeout
not ok 2 - hangs past its timeout
  ---
  failureType: 'testTimeoutFailure'
  error: 'test timed out after 100ms'
  ...
1..4
# tests 4
# suites 0
# pass 1
# fail 1
# cancelled 2
# skipped 0
# todo 0
# duration_ms 1254.6
`;
  assert.deepEqual(tapSummary(tap), { pass: 1, fail: 1, cancelled: 2 });
  // A file stopped at the file limit (--test-timeout): the file is one cancelled test.
  assert.deepEqual(tapSummary("TAP version 13\nok 1 - first passes\nnot ok 1 - /repo/hang.test.ts\n1..2\n# tests 2\n# pass 1\n# fail 0\n# cancelled 1\n"), {
    pass: 1,
    fail: 0,
    cancelled: 1,
  });
  // Cut short before its summary: none, whatever a test printed.
  assert.equal(tapSummary("TAP version 13\n# Subtest: prints\n# pass 500\n# fail 0\nok 1 - prints\n"), null);
  assert.equal(tapSummary("TAP version 13\nok 1 - a\n1..1\n# tests 1\n# pass 1\n"), null);
});

test("Playwright's errors outside any test are in the digest, and a run that stopped before any test says so", () => {
  const report = {
    suites: [],
    errors: [
      { message: "\u001b[31mError: spec file cannot load\u001b[39m", location: { file: "/repo/e2e/b.spec.ts", line: 2, column: 7 } },
      { message: "Error: Process from config.webServer was not able to start. Exit code: 3" },
    ],
    stats: { expected: 0, unexpected: 0, flaky: 0, skipped: 0 },
  };
  const failures = playwrightFailures(report);
  assert.deepEqual(failures, [
    { name: "playwright, outside any test", location: "/repo/e2e/b.spec.ts:2", error: "Error: spec file cannot load" },
    { name: "playwright, outside any test", location: "", error: "Error: Process from config.webServer was not able to start. Exit code: 3" },
  ]);
  assert.match(formatFailures(failures), /^✖ playwright, outside any test \(\/repo\/e2e\/b\.spec\.ts:2\)\n {4}Error: spec file cannot load\n/);
  assert.deepEqual(playwrightSummary(report), { passed: 0, failed: 0, tests: 0 });
  assert.deepEqual(playwrightSummary({ stats: { expected: 3, unexpected: 1, flaky: 1, skipped: 2 } }), { passed: 4, failed: 1, tests: 7 });
  assert.equal(playwrightSummary({}), null);
});

test("npm test counts timed-out tests as failed, reads the real summary, and names why Playwright ran no test", () => {
  // The repository's layout, with scripts/test.mjs copied (its root is the directory above it), the
  // real scripts/lib, and only the packages the run needs; the stamp makes ensure-install a no-op.
  const dir = mkdtempSync(join(tmpdir(), "meridian-test-mjs-"));
  try {
    for (const sub of ["scripts", "node_modules/@playwright", "packages/fake", "e2e"]) mkdirSync(join(dir, sub), { recursive: true });
    copyFileSync(join(root, "scripts", "test.mjs"), join(dir, "scripts", "test.mjs"));
    symlinkSync(join(root, "scripts", "lib"), join(dir, "scripts", "lib"));
    symlinkSync(join(root, "node_modules", "tsx"), join(dir, "node_modules", "tsx"));
    symlinkSync(join(root, "node_modules", "@playwright", "test"), join(dir, "node_modules", "@playwright", "test"));
    writeFileSync(join(dir, "node_modules", ".meridian-install-stamp"), "no-lock");
    const files: Record<string, string> = {
      "package.json": `{ "name": "fake", "private": true, "type": "module", "scripts": { "build": "true" } }`,
      "playwright.config.ts": `import { defineConfig } from "@playwright/test";
export default defineConfig({ testDir: "./e2e", testMatch: "*.spec.ts", workers: 1, retries: 0 });`,
      "packages/fake/a-timeout.test.ts": `import { test } from "node:test";
import assert from "node:assert/strict";
test("hangs past its timeout 1", { timeout: 100 }, async () => { await new Promise((r) => setTimeout(r, 1000)); });
test("hangs past its timeout 2", { timeout: 100 }, async () => { await new Promise((r) => setTimeout(r, 1000)); });
test("really fails", () => { assert.equal(1, 2); });`,
      "packages/fake/b-prints.test.ts": `import { test } from "node:test";
import assert from "node:assert/strict";
test("prints lines like a summary", () => { console.log("pass 500\\nfail 0\\n1..9"); });
test("fails too", () => { assert.equal(1, 2); });`,
      "packages/fake/c-ok.test.ts": `import { test } from "node:test";\ntest("ok", () => {});`,
      "e2e/a.spec.ts": `import { test } from "@playwright/test";\ntest("never runs", () => {});`,
      "e2e/b.spec.ts": `import { test } from "@playwright/test";\nthrow new Error("spec file cannot load");\ntest("neither", () => {});`,
    };
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    const env: NodeJS.ProcessEnv = { ...process.env, MERIDIAN_TEST_FILTER: join(dir, "packages", "fake") };
    // As when run by hand: not a test file's child, not under npm (no parent watch).
    for (const key of Object.keys(env)) if (key === "NODE_TEST_CONTEXT" || key.startsWith("npm_")) delete env[key];
    const r = spawnSync(process.execPath, [join(dir, "scripts", "test.mjs")], { cwd: dir, env, encoding: "utf8", timeout: 120_000 });
    const output = r.stdout + r.stderr;
    assert.equal(r.status, 1, output);
    const lines = r.stdout.trimEnd().split("\n");
    // node:test: "ok" and "prints lines like a summary" passed; 2 failures + 2 timeouts. Playwright:
    // no test ran, one failure.
    assert.equal(lines.at(-1), "2 passed, 5 failed", output);
    const digest = r.stdout.slice(r.stdout.indexOf("[meridian] failures:"));
    for (const name of ["hangs past its timeout 1", "hangs past its timeout 2", "really fails", "fails too"])
      assert.match(digest, new RegExp(`✖ ${name} `), output);
    assert.match(digest, /✖ playwright, outside any test \(.*b\.spec\.ts:2\)\n {4}Error: spec file cannot load\n/, output);
    assert.match(digest, /✖ playwright test\n {4}exit 1 with no failed test; no test ran\n/, output);
    assert.doesNotMatch(digest, /node:test \(node\.tap\)/, "the timed-out tests are the node:test failures, not one for its exit code");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
