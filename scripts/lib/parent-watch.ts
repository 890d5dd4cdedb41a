// Parent watch: a supervisor that outlives the process that started it stops itself.
// Run:    imported by scripts/start.mjs; prints nothing.
//
// `npm start` runs start.mjs under `sh -c`. Killing npm (`kill <npm pid>`, a process manager's
// stop) ends npm and that shell and passes no signal on, so start.mjs, with the console and the
// demo fleet under it, kept running, reparented to init. Linux tells a process nothing when its
// parent dies (Node has no PR_SET_PDEATHSIG), so the watch compares process.ppid with the parent the
// process started under, once a second: it changes only when that parent is gone.
// Only under npm (runUnderNpm): a script started by hand, say `nohup node scripts/start.mjs &`, is
// meant to outlive the shell that started it.
// start.mjs's own children need no watch: the supervisor starts them with a parent-death signal
// (supervisor.ts), which npm's shell, not started by us, cannot be given.

export interface ParentWatchOptions {
  /** How often to look (default 1 s). */
  everyMs?: number;
  /** The parent's PID now (default process.ppid; tests substitute their own). */
  parentPid?: () => number;
}

/** Calls `onGone` once, when the parent this process started under has gone. */
export function whenParentGone(onGone: () => void, options: ParentWatchOptions = {}): void {
  const parentPid = options.parentPid ?? (() => process.ppid);
  const startedUnder = parentPid();
  const timer = setInterval(() => {
    if (parentPid() === startedUnder) return;
    clearInterval(timer);
    onGone();
  }, options.everyMs ?? 1_000);
  // The watch alone must not keep a process alive that has nothing else to do.
  timer.unref();
}

/** Whether this process runs under an npm script (npm sets npm_lifecycle_event; children inherit it). */
export function runUnderNpm(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.npm_lifecycle_event);
}
