// exit-guard: a node:test preload that makes a test file's process end without losing a verdict.
// - A file whose process exits before its tests have finished fails. node:test (Node 20) counts a
//   file that calls process.exit(0) partway through as passed and silently drops the tests it had not
//   run yet; with this preload that process exits 1 instead, so the runner reports the file as failed
//   (error 'test failed', exitCode 1) and npm test counts it. "Finished" means the root test's after()
//   hooks ran: node:test runs them once every test of the file is done, before it exits (also under
//   --test-force-exit).
// - A file's results reach the runner whole. The file's process sends its test events to the runner
//   through its stdout, a pipe, whose writes Node makes asynchronously on Linux; --test-force-exit
//   calls process.exit() as soon as the last test ends, and the events still buffered are lost. The
//   runner then counts fewer tests than ran, with no failure and exit 0 (nodejs/node#64833, open in
//   Node 20.20; measured here: 197–200 of 200 tests counted in 8 runs of one file). A blocking stdout
//   has written every event by the time process.exit() runs, as Node's own net and tty streams make
//   it before exiting.
// Run (scripts/test.mjs does): node --import tsx --import ./scripts/lib/exit-guard.mjs --test <files>
// Prints, only in a file's process that exits 0 early, one line on stderr (which the spec reporter
// shows under the file) naming the file. Inactive elsewhere: only where NODE_TEST_CONTEXT is set (the
// runner sets it in the processes it starts for the files) and the entry point is a *.test.* file,
// since a process that a test starts inherits the variable, and through fork() this preload too.
// Test: node --import tsx --test scripts/lib/exit-guard.test.ts
const entry = process.argv[1] ?? "";

if (process.env.NODE_TEST_CONTEXT && /\.test\.[cm]?[jt]sx?$/.test(entry)) {
  // A pipe's handle has setBlocking (a file or a TTY has none, or is synchronous already).
  process.stdout._handle?.setBlocking?.(true);
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
