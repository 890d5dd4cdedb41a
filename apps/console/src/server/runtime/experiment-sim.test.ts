// Why a failed simulator run failed, as the experiments page shows it: the line of stderr that names
// the cause, not the banner or trace Node and V8 print around it.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { SimStderr } from "./experiment-sim";

/** The stderr of a real out-of-memory `node --max-old-space-size=16` (abridged native stack). */
const OOM_STDERR = `
<--- Last few GCs --->

[29360:0x16223e20]      156 ms: Mark-Compact 15.5 (24.3) -> 15.5 (32.1) MB, 6.22 / 0.00 ms  (average mu = 0.309, current mu = 0.168) allocation failure; scavenge might not succeed
[29360:0x16223e20]      162 ms: Mark-Compact 16.3 (32.8) -> 16.3 (32.8) MB, 4.61 / 0.00 ms  (average mu = 0.281, current mu = 0.239) allocation failure; scavenge might not succeed


<--- JS stacktrace --->

FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory
----- Native stack trace -----

 1: 0xb78db3 node::OOMErrorHandler(char const*, v8::OOMDetails const&) [node]
 2: 0xee8300 v8::Utils::ReportOOMFailure(v8::internal::Isolate*, char const*, v8::OOMDetails const&) [node]
16: 0x195e476  [node]
`;

/** Node 20's stderr when a module the simulator imports is missing. */
const MISSING_MODULE_STDERR = `node:internal/modules/esm/resolve:283
    throw new ERR_MODULE_NOT_FOUND(
          ^

Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/app/packages/sim/dist/cli.js' imported from /app/bin/meridian-sim.mjs
    at finalizeResolution (node:internal/modules/esm/resolve:283:11)
    at moduleResolve (node:internal/modules/esm/resolve:952:10) {
  code: 'ERR_MODULE_NOT_FOUND',
  url: 'file:///app/packages/sim/dist/cli.js'
}

Node.js v20.20.2
`;

const failureOf = (stderr: string, code: number | null, signal: NodeJS.Signals | null) => {
  const progress: number[] = [];
  const sim = new SimStderr((p) => progress.push(p));
  sim.write(stderr);
  return { message: sim.failure(code, signal), progress };
};

test("a simulator that ran out of heap says so, and its GC trace is no progress", () => {
  const { message, progress } = failureOf(`progress 10/40 gorgo\n${OOM_STDERR}`, null, "SIGABRT");
  assert.equal(message, "the simulator was killed (SIGABRT): FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory");
  assert.deepEqual(progress, [0.25]);
});

test("a crash names Node's error line, not the source line it points at", () => {
  const { message } = failureOf(MISSING_MODULE_STDERR, 1, null);
  assert.equal(
    message,
    "the simulator exited with code 1: Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/app/packages/sim/dist/cli.js' imported from /app/bin/meridian-sim.mjs",
  );
});

test("the CLI's own error line still comes first, and any other line is the last resort", () => {
  assert.equal(failureOf("meridian-sim: error: --trace: no such file\n", 2, null).message, "meridian-sim: error: --trace: no such file");
  const unexpected = "meridian-sim: unexpected error: RangeError: Invalid array length\n    at run (sim.js:1:2)\n";
  assert.equal(failureOf(unexpected, 1, null).message, "meridian-sim: unexpected error: RangeError: Invalid array length");
  assert.equal(
    failureOf("(node:12) Warning: something odd\n", null, "SIGKILL").message,
    "the simulator was killed (SIGKILL): (node:12) Warning: something odd",
  );
  assert.equal(failureOf("", null, "SIGTERM").message, "the simulator was killed (SIGTERM)");
});
