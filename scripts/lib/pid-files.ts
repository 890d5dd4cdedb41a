// pid-files: one `<name>.pid` file per supervised demo-fleet process, in the fleet's state
// directory. Not a CLI; used by scripts/demo-fleet.ts. Prints nothing.
//
// Why: the files say which PID serves which engine or LB (operators and the e2e fault specs signal
// a process by them), and they let a demo fleet that was itself killed (SIGKILL leaves its children
// running, holding their ports) stop those leftovers before it starts new ones; only a fleet that
// holds the directory's lock (fleet-lock.ts) does, so a fleet that still runs is never taken for a
// killed one. A leftover is stopped only when /proc/<pid>/cmdline still contains the marker the
// fleet started it with (its config path or engine id), so a recycled PID that now belongs to
// something else is never touched.
// A pid file is written to a temporary file beside it and renamed into place: a fleet killed
// mid-write leaves the previous file or the new one, never a half-written one that readPidFile
// rejects (its process then was never stopped, and the next fleet exited 2 on the port it held).
// stopLeftovers removes the temporary files such a fleet left.
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { processCommandLine } from "./fleet-lock.core.mjs";

export function pidFilePath(dir: string, name: string): string {
  return join(dir, `${name}.pid`);
}

/** A temporary pid file (`<name>.pid.<writer pid>.tmp`), renamed into place once written. */
const TEMPORARY = /\.pid\.\d+\.tmp$/;

export function writePidFile(dir: string, name: string, pid: number, marker: string): void {
  const path = pidFilePath(dir, name);
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${pid}\n${marker}\n`);
  renameSync(temporary, path);
}

export function readPidFile(dir: string, name: string): { pid: number; marker: string } | null {
  const path = pidFilePath(dir, name);
  if (!existsSync(path)) return null;
  const [pidText, marker] = readFileSync(path, "utf8").split("\n");
  const pid = Number(pidText);
  return Number.isInteger(pid) && pid > 0 && marker ? { pid, marker } : null;
}

export function removePidFile(dir: string, name: string): void {
  rmSync(pidFilePath(dir, name), { force: true });
}

/** Whether a process with this PID exists (signal 0 delivers nothing). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Stops the processes an earlier fleet left behind (SIGTERM, SIGKILL after graceMs) and removes
 * every pid file in `dir` (and every temporary one a fleet killed mid-write left). Returns what it stopped. Only for a fleet that holds the directory's
 * lock (fleet-lock.ts): the pid files of a fleet that still runs name its live children.
 */
export async function stopLeftovers(dir: string, graceMs = 3_000): Promise<{ name: string; pid: number }[]> {
  if (!existsSync(dir)) return [];
  for (const file of readdirSync(dir).filter((f) => TEMPORARY.test(f))) rmSync(join(dir, file), { force: true });
  const stopped: { name: string; pid: number }[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".pid"))) {
    const name = file.slice(0, -".pid".length);
    const entry = readPidFile(dir, name);
    removePidFile(dir, name);
    if (!entry || !isAlive(entry.pid) || !processCommandLine(entry.pid)?.includes(entry.marker)) continue;
    process.kill(entry.pid, "SIGTERM");
    const deadline = Date.now() + graceMs;
    while (isAlive(entry.pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    if (isAlive(entry.pid)) process.kill(entry.pid, "SIGKILL");
    stopped.push({ name, pid: entry.pid });
  }
  return stopped;
}
