// fleet-lock: one demo fleet per state directory. Not a CLI; scripts/demo-fleet.ts takes the lock,
// scripts/start.mjs looks at it before it starts anything. Prints nothing.
//
// Why: a second fleet on the same state directory (the same database path and base port) used to
// take the first one's live engines and LBs for leftovers of a killed fleet, stop them, and then the
// two fleets fought over the ports for ever. A fleet now takes `<state dir>/fleet.lock` before it
// touches anything there, and stops leftovers (pid-files.ts) only once it holds it.
//
// Decisions
// - The lock itself (fleet-lock.core.mjs, shared with `npm start`'s run lock) holds the fleet's PID, a
//   marker and, on Linux, the fleet's start time (`<pid>\n<marker>\n<start>\n`), and is created whole
//   and exclusively, so no reader ever sees a lock half written.
// - A lock is stale when its PID is this process's own and this process did not take it (a fleet
//   killed outright whose PID the next fleet got again: routine in a container, whose PID namespace
//   restarts), dead, alive with another start time (reused, maybe by another demo fleet), or alive
//   without the marker in its command line (reused by something else): it is replaced. Where /proc is
//   not available, another live PID counts as a fleet: refusing is the safe side, and the message
//   names the PID.
// - Of several fleets that find the same stale lock, only one takes it (fleet-lock.core.mjs).
// - release() removes the lock only while it still names this process.
import { join } from "node:path";
import { acquirePidLock, type LockAttempt, pidLockHolder } from "./fleet-lock.core.mjs";

/** What a demo fleet's command line contains (its script's name). */
const FLEET_MARKER = "demo-fleet";

export function fleetLockPath(dir: string): string {
  return join(dir, "fleet.lock");
}

/** The PID of the live fleet that holds the lock in `dir`, or null when none does (no lock, or a stale one). */
export function lockHolder(dir: string): number | null {
  return pidLockHolder(fleetLockPath(dir));
}

/**
 * Takes the lock in `dir` (which must exist) for this process. `pid` and `marker` are for tests: the
 * marker must be part of the holder's command line, or the next fleet may take the lock for stale.
 */
export function acquireFleetLock(dir: string, options: { pid?: number; marker?: string } = {}): LockAttempt {
  return acquirePidLock(fleetLockPath(dir), { pid: options.pid, marker: options.marker ?? FLEET_MARKER });
}
