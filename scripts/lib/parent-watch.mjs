// Parent watch: a supervisor that outlives the process that started it stops itself.
// Run:    imported by scripts/start.mjs; prints nothing. Plain ESM (types in parent-watch.d.mts), so
//         that start.mjs can install it before any dependency is installed.
//
// `npm start` runs start.mjs under `sh -c`. Killing npm (`kill <npm pid>`, a process manager's
// stop) ends npm and that shell and passes no signal on, so start.mjs, with the console and the
// demo fleet under it, kept running, reparented to init. Linux tells a process nothing when its
// parent dies (Node has no PR_SET_PDEATHSIG), so the watch compares process.ppid with the parent the
// process started under, once a second: it changes only when that parent is gone.
// The parent to compare with is best read first thing (expectedParent): read when the watch is
// installed, after a step that took a while, it may already be init's PID, and the watch would then
// wait for a change that never comes. A parent already gone when the watch starts is reported at once.
// Only under npm (runUnderNpm): a script started by hand, say `nohup node scripts/start.mjs &`, is
// meant to outlive the shell that started it.
// start.mjs's own children need no watch: the supervisor starts them with a parent-death signal
// (supervisor.ts), which npm's shell, not started by us, cannot be given.

/** Calls `onGone` once, when the parent this process started under has gone. */
export function whenParentGone(onGone, options = {}) {
  const parentPid = options.parentPid ?? (() => process.ppid);
  const startedUnder = options.expectedParent ?? parentPid();
  let gone = false;
  const look = () => {
    if (gone || parentPid() === startedUnder) return;
    gone = true;
    clearInterval(timer);
    onGone();
  };
  const timer = setInterval(look, options.everyMs ?? 1_000);
  // The watch alone must not keep a process alive that has nothing else to do.
  timer.unref();
  // A parent that went before the watch was installed: reported at once (not from inside this call).
  if (options.expectedParent !== undefined) setImmediate(look);
}

/** Whether this process runs under an npm script (npm sets npm_lifecycle_event; children inherit it). */
export function runUnderNpm(env = process.env) {
  return Boolean(env.npm_lifecycle_event);
}
