import { strict as assert } from "node:assert";
import { test } from "node:test";
import { formatFailures, playwrightFailures, tapFailures } from "./test-failures.mjs";

// node:test's TAP for a file with a failing subtest, a failing test with a two-line error, and a pass.
const TAP = `TAP version 13
# Subtest: outer
    # Subtest: inner fails
    not ok 1 - inner fails
      ---
      duration_ms: 1.2
      location: '/repo/a.test.ts:3:38'
      failureType: 'testCodeFailure'
      error: |-
        one is not two
        
        1 !== 2
        
      code: 'ERR_ASSERTION'
      stack: |-
        TestContext.<anonymous> (file:///repo/a.test.ts:3:71)
      ...
    1..1
not ok 1 - outer
  ---
  duration_ms: 1.7
  location: '/repo/a.test.ts:3:1'
  failureType: 'subtestsFailed'
  error: '1 subtest failed'
  ...
# Subtest: plain fails
not ok 2 - plain fails
  ---
  location: '/repo/a.test.ts:4:1'
  failureType: 'testCodeFailure'
  error: 'timed out waiting for the doomed engine''s stream'
  ...
# Subtest: ok
ok 3 - ok
  ---
  duration_ms: 0.07
  ...
1..3
# pass 1
# fail 2
`;

test("a TAP digest names each failing test once, where it is and its error, not the parent that failed with it", () => {
  assert.deepEqual(tapFailures(TAP), [
    { name: "inner fails", location: "/repo/a.test.ts:3:38", error: "one is not two\n1 !== 2" },
    { name: "plain fails", location: "/repo/a.test.ts:4:1", error: "timed out waiting for the doomed engine's stream" },
  ]);
  assert.deepEqual(tapFailures("TAP version 13\nok 1 - fine\n1..1\n"), []);
});

test("a test file whose process failed is named with how its process ended", () => {
  const tap = (exitCode: string, signal: string) => `TAP version 13
# Subtest: /repo/exits.test.ts
not ok 1 - /repo/exits.test.ts
  ---
  duration_ms: 496.5
  location: '/repo/exits.test.ts:1:1'
  failureType: 'testCodeFailure'
  exitCode: ${exitCode}
  signal: ${signal}
  error: 'test failed'
  code: 'ERR_TEST_FAILURE'
  ...
1..1
`;
  assert.deepEqual(tapFailures(tap("1", "~")), [
    { name: "/repo/exits.test.ts", location: "/repo/exits.test.ts:1:1", error: "test failed (its process exited with code 1)" },
  ]);
  assert.equal(tapFailures(tap("~", "'SIGKILL'"))[0]?.error, "test failed (its process was killed by SIGKILL)");
});

test("a Playwright digest names the unexpected failures with the first lines of their error, without colour codes", () => {
  const report = {
    suites: [
      {
        title: "04-tuner.spec.ts",
        specs: [
          { title: "passes", file: "04-tuner.spec.ts", line: 5, tests: [{ status: "expected", results: [{ status: "passed", errors: [] }] }] },
          {
            title: "shows the trial",
            file: "04-tuner.spec.ts",
            line: 11,
            tests: [
              {
                status: "unexpected",
                results: [{ status: "failed", error: { message: "\u001b[31mError: expect(locator).toBeVisible()\u001b[39m\nLocator: trial" } }],
              },
            ],
          },
        ],
      },
    ],
  };
  const failures = playwrightFailures(report);
  assert.deepEqual(failures, [{ name: "shows the trial", location: "04-tuner.spec.ts:11", error: "Error: expect(locator).toBeVisible()\nLocator: trial" }]);
  assert.equal(formatFailures(failures), "✖ shows the trial (04-tuner.spec.ts:11)\n    Error: expect(locator).toBeVisible()\n    Locator: trial");
});
