// node-tests: runs test files under node:test as `node --test` does (one process per file, spec
// output to stdout, TAP to a file), except that only the files' processes are force-exited.
// A file that leaves a handle open (a server, a timer) must end once its tests have, or the run waits
// forever; --test-force-exit does that, but on the `node --test` command line (Node 20.20) it also
// makes the runner itself exit as soon as its reporters' stream closes, before the TAP file's write
// stream has flushed: the TAP then ends early, without its "# pass"/"# fail" summary. run()'s
// forceExit passes --test-force-exit to the files' processes only; this process ends on its own
// once the TAP file is written.
// Run (scripts/test.mjs does):
//   node [--import tsx …] --test-concurrency=<n> --test-timeout=<ms> scripts/lib/node-tests.mjs <tap file> <file>...
//   The Node options reach every file's process, as with `node --test` (node:test passes its execArgv
//   on); --test-concurrency and --test-timeout (the "=" form) are read here too, as `node --test`
//   reads them: files run at once, and each file's (and by default each test's) time limit.
// Prints the spec reporter's output on stdout; exits 1 when a test failed (as `node --test` does).
import { createWriteStream } from "node:fs";
import { compose } from "node:stream";
import { run } from "node:test";
import { spec, tap } from "node:test/reporters";

const [tapFile, ...files] = process.argv.slice(2);
if (!tapFile || files.length === 0) {
  process.stderr.write("usage: node [node options] scripts/lib/node-tests.mjs <tap file> <file>...\n");
  process.exit(2);
}

/** The value of a Node option given as --name=value, or undefined. */
const option = (name) => process.execArgv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);

const stream = run({
  files,
  concurrency: Number(option("test-concurrency")) || true,
  timeout: Number(option("test-timeout")) || Infinity,
  forceExit: true,
});
stream.on("test:fail", (data) => {
  if (!data.todo) process.exitCode = 1;
});
compose(stream, spec()).pipe(process.stdout);
compose(stream, tap).pipe(createWriteStream(tapFile));
