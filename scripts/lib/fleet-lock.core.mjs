// fleet-lock.core: a lock file that names the live process holding it (`<pid>\n<marker>\n<start>\n`).
// Not a CLI; the demo fleet's lock (fleet-lock.ts) and `npm start`'s run lock (scripts/start.mjs,
// which needs it before any dependency is installed: plain ESM) are both this. Prints nothing.
//
// Decisions
// - The lock holds the holder's PID, a marker (a word of its command line) and, on Linux, the
//   holder's start time (/proc/<pid>/stat field 22, clock ticks since boot). It is created whole and
//   exclusively: written to a file of this process's own, then hard-linked to the lock's name, which
//   fails when the name exists (as an O_EXCL create does), so no reader ever sees a lock half written.
// - A lock is stale, and replaced, when its PID is
//   - this process's own, and this process did not take it (a lock left by a process killed outright
//     whose PID we were given again: after a container restart the same process tree gets the same
//     PIDs). Refusing it would refuse ourselves for ever;
//   - dead;
//   - alive but started at another time than the lock says (the PID was reused, maybe by another
//     holder of the same kind: another demo fleet, another `npm start`);
//   - alive but without the marker in its command line (reused by something else; this is the check
//     for a lock written without a start time, by an older version or where /proc is not available).
//   Where /proc is not available a live PID other than ours counts as the holder: refusing is the
//   safe side, and the message names the PID.
// - Replacing a stale lock: it is renamed aside, and the renamed file must be the one judged stale
//   (same inode); if another process replaced it in between, its lock is put back and looked at
//   again. So two processes that find the same stale lock never both take it.
// - release() removes the lock only while it still names this process.
// - note() says what the holder is doing: one more line after the header (`<taken>\t<since>\t<doing>`,
//   ISO times: when the lock was taken, when this step began), rewritten in place while the header's
//   bytes stay as they are, so a reader always parses the header. A refused taker gets it back, so
//   its message says who holds the lock, since when and in which step (a start-up lock held for
//   minutes in CI once said only a PID).
import { closeSync, fstatSync, ftruncateSync, linkSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { resolve } from "node:path";

/** The locks this process took and has not released (path → the PID it took it as). */
const held = new Map();

/** Whether a process with this PID exists (EPERM: it does, under another user). */
function exists(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
}

/** The process's command line, or null where /proc is not available or the process is gone. */
export function processCommandLine(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return null;
  }
}

/**
 * When the process started (/proc/<pid>/stat field 22, clock ticks since boot, as text), or null
 * where /proc is not available or the process is gone. With the PID it names one process for good.
 */
export function processStartTime(pid) {
  let stat;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // `pid (comm) state ppid ...`: comm may hold spaces and parentheses; the fields after it start at 3.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const start = fields[22 - 3];
  return start && /^\d+$/.test(start) ? start : null;
}

function parse(text) {
  const [pidText, marker, start, note] = text.split("\n");
  const pid = Number(pidText);
  if (!(Number.isInteger(pid) && pid > 0 && marker)) return null;
  const [since, doingSince, ...doing] = (note ?? "").split("\t");
  return { pid, marker, start: start || null, note: doing.length > 0 ? { since, doing: doing.join(" "), doingSince } : null };
}

/** Whether the process the lock at `path` names still runs and is the one that wrote it. */
function holds(path, entry, self) {
  // Our own PID: ours only if this process took the lock (and has not released it).
  if (entry.pid === self || entry.pid === process.pid) return held.get(path) === entry.pid;
  if (!exists(entry.pid)) return false;
  if (entry.start !== null) {
    const start = processStartTime(entry.pid);
    if (start !== null) return start === entry.start;
  }
  const command = processCommandLine(entry.pid);
  return command === null || command.includes(entry.marker);
}

/** The lock's content and inode, or null when there is none. */
function readLock(path) {
  let fd;
  try {
    fd = openSync(path, "r");
  } catch (error) {
    if (error.code === "ENOENT") return null;
    throw error;
  }
  try {
    return { entry: parse(readFileSync(fd, "utf8")), ino: fstatSync(fd).ino };
  } finally {
    closeSync(fd);
  }
}

/** The PID of the live process that holds the lock at `path`, or null when none does (no lock, or a stale one). */
export function pidLockHolder(path) {
  const full = resolve(path);
  const seen = readLock(full);
  return seen?.entry && holds(full, seen.entry, process.pid) ? seen.entry.pid : null;
}

/**
 * Takes the lock at `path` (its directory must exist) for process `pid` (this one unless a test says
 * otherwise). `marker` must be part of the holder's command line, or where no start time can be read
 * the next taker will take the lock for stale.
 */
export function acquirePidLock(path, { pid = process.pid, marker }) {
  const full = resolve(path);
  const own = `${full}.${pid}`;
  const start = processStartTime(pid);
  let replaced = null;
  const header = `${pid}\n${marker}\n${start === null ? "" : `${start}\n`}`;
  writeFileSync(own, header, { flag: "w" });
  try {
    // Each round either takes the lock, finds its live holder, or removes a stale lock; a round that
    // loses a race to another process looks again. More than a few rounds means something is wrong.
    for (let round = 0; round < 20; round += 1) {
      try {
        linkSync(own, full);
        held.set(full, pid);
        const takenAt = new Date().toISOString();
        // Without a start time the header has two lines: an empty third keeps the note out of it.
        const gap = start === null ? "\n" : "";
        const note = (doing) => noteIfOurs(full, pid, Buffer.byteLength(header), `${gap}${takenAt}\t${new Date().toISOString()}\t${oneLine(doing)}\n`);
        return { ok: true, lock: { path: full, release: () => releaseIfOurs(full, pid), note }, replaced };
      } catch (error) {
        if (error.code !== "EEXIST") throw error;
      }
      const seen = readLock(full);
      if (seen === null) continue; // removed meanwhile
      if (seen.entry && holds(full, seen.entry, pid)) return { ok: false, holder: seen.entry.pid, ...(seen.entry.note ?? {}) };
      const aside = `${full}.stale.${pid}`;
      try {
        renameSync(full, aside);
      } catch (error) {
        if (error.code === "ENOENT") continue; // another process removed it
        throw error;
      }
      if (statSync(aside).ino !== seen.ino) {
        // Another process replaced the stale lock after we read it: that lock is live; put it back.
        try {
          linkSync(aside, full);
        } catch (error) {
          if (error.code !== "EEXIST") throw error;
        }
      } else {
        replaced = seen.entry?.pid ?? replaced;
      }
      rmSync(aside, { force: true });
    }
    throw new Error(`could not take ${full}: it keeps changing`);
  } finally {
    rmSync(own, { force: true });
  }
}

function releaseIfOurs(path, pid) {
  if (held.get(path) !== pid) return;
  held.delete(path);
  const seen = readLock(path);
  if (seen?.entry?.pid === pid) rmSync(path, { force: true });
}

/** Rewrites the lock's note (everything after its header) while the lock still names this process. */
function noteIfOurs(path, pid, noteAt, text) {
  if (held.get(path) !== pid) return;
  let fd;
  try {
    fd = openSync(path, "r+");
  } catch {
    return; // removed meanwhile: nothing to say
  }
  try {
    if (parse(readFileSync(fd, "utf8"))?.pid !== pid) return;
    ftruncateSync(fd, noteAt);
    writeSync(fd, text, noteAt);
  } finally {
    closeSync(fd);
  }
}

const oneLine = (text) => String(text).replace(/\s+/g, " ").trim();
