// Types of parent-watch.mjs (plain ESM so that start.mjs can install the watch before any dependency is installed).
export interface ParentWatchOptions {
  /** How often to look (default 1 s). */
  everyMs?: number;
  /** The parent's PID now (default process.ppid; tests substitute their own). */
  parentPid?: () => number;
  /** The parent the process started under, as read first thing (default: the parent when the watch is installed). */
  expectedParent?: number;
}

/** Calls `onGone` once, when the parent this process started under has gone. */
export function whenParentGone(onGone: () => void, options?: ParentWatchOptions): void;

/** Whether this process runs under an npm script (npm sets npm_lifecycle_event; children inherit it). */
export function runUnderNpm(env?: NodeJS.ProcessEnv): boolean;
