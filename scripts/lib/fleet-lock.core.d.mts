// Types of fleet-lock.core.mjs (plain ESM so that scripts/start.mjs can use it before any dependency is installed).
export interface PidLock {
  path: string;
  /** Removes the lock if it still names this process; safe to call more than once. */
  release(): void;
}
/** Taken (`replaced`: the PID of a stale lock it replaced, if any), or held by the live process `holder`. */
export type LockAttempt = { ok: true; lock: PidLock; replaced: number | null } | { ok: false; holder: number };
export function processStartTime(pid: number): string | null;
export function processCommandLine(pid: number): string | null;
export function pidLockHolder(path: string): number | null;
export function acquirePidLock(path: string, options: { pid?: number | undefined; marker: string }): LockAttempt;
