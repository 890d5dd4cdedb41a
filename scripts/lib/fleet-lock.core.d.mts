// Types of fleet-lock.core.mjs (plain ESM so that scripts/start.mjs can use it before any dependency is installed).
export interface PidLock {
  path: string;
  /** Removes the lock if it still names this process; safe to call more than once. */
  release(): void;
  /** Records in the lock what the holder is doing from now on (one line), for whoever is refused it. */
  note(doing: string): void;
}
/** What the holder said it is doing (PidLock.note): ISO times of taking the lock and of starting `doing`. */
export interface HolderNote {
  since: string;
  doing: string;
  doingSince: string;
}
/**
 * Taken (`replaced`: the PID of a stale lock it replaced, if any), or held by the live process
 * `holder` (with its note, once it wrote one).
 */
export type LockAttempt = { ok: true; lock: PidLock; replaced: number | null } | ({ ok: false; holder: number } & Partial<HolderNote>);
export function processStartTime(pid: number): string | null;
export function processCommandLine(pid: number): string | null;
export function pidLockHolder(path: string): number | null;
export function acquirePidLock(path: string, options: { pid?: number | undefined; marker: string }): LockAttempt;
