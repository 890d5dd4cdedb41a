// exit-guard: a node:test preload that fails a test file whose process exits before its tests have
// finished. node:test (Node 20) counts a file that calls process.exit(0) partway through as passed
// and silently drops the tests it had not run yet; with this preload that process exits 1 instead,
// so the runner reports the file as failed (error 'test failed', exitCode 1) and npm test counts it.
// "Finished" means the root test's after() hooks ran: node:test runs them once every test of the
// file is done, before it exits (also under --test-force-exit).
// Run (scripts/test.mjs does): node --import tsx --import ./scripts/lib/exit-guard.mjs --test <files>
// Prints, only in a file's process that exits 0 early, one line on stderr (which the spec reporter
// shows under the file) naming the file. Inactive elsewhere: only where NODE_TEST_CONTEXT is set (the
// runner sets it in the processes it starts for the files) and the entry point is a *.test.* file,
// since a process that a test starts inherits the variable, and through fork() this preload too.
// Test: node --import tsx --test scripts/lib/exit-guard.test.ts
const entry = process.argv[1] ?? "";

if (process.env.NODE_TEST_CONTEXT && /\.test\.[cm]?[jt]sx?$/.test(entry)) {
  // Imported here, not at the top: node:test's after() creates the file's root test, which a
  // process that is not a test file must not get.
  const { after } = await import("node:test");
  let finished = false;
  after(() => {
    finished = true;
  });
  process.on("exit", (code) => {
    if (finished || code !== 0) return;
    process.exitCode = 1;
    process.stderr.write(`[exit-guard] ${entry} exited with code 0 before its tests finished (process.exit() in a test or in the code it runs?); failing it\n`);
  });
}
