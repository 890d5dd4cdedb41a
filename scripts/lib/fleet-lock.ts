// fleet-lock: one demo fleet per state directory. Not a CLI; scripts/demo-fleet.ts takes the lock,
// scripts/start.mjs looks at it before it starts anything. Prints nothing.
//
// Why: a second fleet on the same state directory (the same database path and base port) used to
// take the first one's live engines and LBs for leftovers of a killed fleet, stop them, and then the
// two fleets fought over the ports for ever. A fleet now takes `<state dir>/fleet.lock` before it
// touches anything there, and stops leftovers (pid-files.ts) only once it holds it.
//
// Decisions
// - The lock holds the fleet's PID and a marker (`<pid>\n<marker>\n`, as the pid files do). It is
//   created whole and exclusively: written to a file of this process's own, then hard-linked to
//   `fleet.lock`, which fails when the name exists (as an O_EXCL create does), so no reader ever sees
//   a lock half written.
// - A lock is stale when its PID is dead, or alive but without the marker in its command line (the
//   PID was reused by something else): it is replaced. Where /proc is not available, a live PID counts
//   as a fleet: refusing is the safe side, and the message names the PID.
// - Replacing a stale lock: it is renamed aside, and the renamed file must be the one judged stale
//   (same inode); if another fleet replaced it in between, its lock is put back and looked at again.
//   So two fleets that find the same stale lock never both take it.
// - release() removes the lock only while it still names this process.
import { closeSync, fstatSync, linkSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { processCommandLine } from "./pid-files";

/** What a demo fleet's command line contains (its script's name). */
const FLEET_MARKER = "demo-fleet";

export interface FleetLock {
  path: string;
  /** Removes the lock if it still names this process; safe to call more than once. */
  release(): void;
}

/** Taken (`replaced`: the PID of a stale lock it replaced, if any), or held by the live fleet `holder`. */
export type LockAttempt = { ok: true; lock: FleetLock; replaced: number | null } | { ok: false; holder: number };

export function fleetLockPath(dir: string): string {
  return join(dir, "fleet.lock");
}

/** Whether a process with this PID exists (EPERM: it does, under another user). */
function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function parse(text: string): { pid: number; marker: string } | null {
  const [pidText, marker] = text.split("\n");
  const pid = Number(pidText);
  return Number.isInteger(pid) && pid > 0 && marker ? { pid, marker } : null;
}

/** Whether the process a lock names still runs and is what wrote it. */
function holds(entry: { pid: number; marker: string }): boolean {
  if (!exists(entry.pid)) return false;
  const command = processCommandLine(entry.pid);
  return command === null || command.includes(entry.marker);
}

/** The lock's content and inode, or null when there is none. */
function readLock(path: string): { entry: { pid: number; marker: string } | null; ino: number } | null {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
  try {
    return { entry: parse(readFileSync(fd, "utf8")), ino: fstatSync(fd).ino };
  } finally {
    closeSync(fd);
  }
}

/** The PID of the live fleet that holds the lock in `dir`, or null when none does (no lock, or a stale one). */
export function lockHolder(dir: string): number | null {
  const seen = readLock(fleetLockPath(dir));
  return seen?.entry && holds(seen.entry) ? seen.entry.pid : null;
}

/**
 * Takes the lock in `dir` (which must exist) for this process. `pid` and `marker` are for tests: the
 * marker must be part of the holder's command line, or the next fleet will take the lock for stale.
 */
export function acquireFleetLock(dir: string, options: { pid?: number; marker?: string } = {}): LockAttempt {
  const pid = options.pid ?? process.pid;
  const marker = options.marker ?? FLEET_MARKER;
  const path = fleetLockPath(dir);
  const own = `${path}.${pid}`;
  let replaced: number | null = null;
  writeFileSync(own, `${pid}\n${marker}\n`, { flag: "w" });
  try {
    // Each round either takes the lock, finds its live holder, or removes a stale lock; a round that
    // loses a race to another fleet looks again. More than a few rounds means something is wrong.
    for (let round = 0; round < 20; round += 1) {
      try {
        linkSync(own, path);
        return { ok: true, lock: { path, release: () => releaseIfOurs(path, pid) }, replaced };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const seen = readLock(path);
      if (seen === null) continue; // removed meanwhile
      if (seen.entry && holds(seen.entry)) return { ok: false, holder: seen.entry.pid };
      const aside = `${path}.stale.${pid}`;
      try {
        renameSync(path, aside);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") continue; // another fleet removed it
        throw error;
      }
      if (statSync(aside).ino !== seen.ino) {
        // Another fleet replaced the stale lock after we read it: that lock is live; put it back.
        try {
          linkSync(aside, path);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        }
      } else {
        replaced = seen.entry?.pid ?? replaced;
      }
      rmSync(aside, { force: true });
    }
    throw new Error(`could not take ${path}: it keeps changing`);
  } finally {
    rmSync(own, { force: true });
  }
}

function releaseIfOurs(path: string, pid: number): void {
  const seen = readLock(path);
  if (seen?.entry?.pid === pid) rmSync(path, { force: true });
}
