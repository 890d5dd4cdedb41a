// run-step: runs one step of `npm test` (a house check, a node:test pass, the build, Playwright) as a
// child process that can neither hang the run nor outlive it.
//   - The step gets its own process group (spawn `detached`), so a signal reaches every process it
//     started (npm → sh → biome; node --test → one process per test file), not only the first one.
//   - Past its timeout it gets its stop signal, and SIGKILL after a grace period: its group and every
//     process descended from it (Linux, read from /proc), which includes a descendant with a group of
//     its own such as Playwright's webServer. The result then says `timedOut`.
//   - forwardSignals(): SIGINT/SIGTERM to `npm test` stop the running steps the same way (with the
//     signal received, or the step's own stopSignal); the caller waits for them (the promises
//     settle once they are gone), sees interrupted() and ends the run non-zero.
//   - Processes of its group still running once the step's first process has exited (a server a test
//     forgot) get the stop signal too, and SIGKILL after the grace period: the step ends when its
//     group is empty.
// Plain ESM (no dependencies), imported by scripts/test.mjs.
// Prints (stderr, "[meridian] " lines): a step that timed out, is stopped on a signal, or left
//   processes behind. Nothing otherwise; the step's own output goes where `stdio` says.
// Test: node --import tsx --test scripts/lib/run-step.test.ts
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { constants } from "node:os";

const say = (message) => process.stderr.write(`[meridian] ${message}\n`);

/** Steps that are running, so that a signal can stop them. */
const running = new Set();
let interruptedBy = null;
let interruptedAt = 0;

/** The signal (SIGINT or SIGTERM) that interrupted `npm test`, or null. */
export function interrupted() {
  return interruptedBy;
}

/** The exit code of a process ended by `signal` (a shell's 128 + n: 130 for SIGINT, 143 for SIGTERM). */
export function signalExitCode(signal) {
  return 128 + (constants.signals[signal] ?? 0);
}

/** From now on SIGINT/SIGTERM stop the running steps instead of killing this process outright (which
 * would leave them running). */
export function forwardSignals() {
  process.on("SIGINT", interrupt);
  process.on("SIGTERM", interrupt);
}

/** Stops the running steps as `signal` would (forwardSignals), and marks the run interrupted. A
 * repeated interruption within 2 s is ignored (Ctrl-C reaches `npm test` from the terminal and once
 * more from npm); a later one SIGKILLs them at once. */
export function interrupt(signal) {
  if (interruptedBy === null) {
    interruptedBy = signal;
    interruptedAt = Date.now();
    for (const step of running) {
      say(`${signal}: stopping ${step.label} (pid ${step.pid}) and waiting for it`);
      step.stop(step.stopSignal ?? signal);
    }
  } else if (Date.now() - interruptedAt > 2_000) {
    for (const step of running) {
      say(`${signal} again: killing ${step.label} (pid ${step.pid})`);
      killAll(step.pid);
    }
  }
}

/**
 * Starts a step. Call it only while interrupted() is null.
 * @param label what the step is called in messages, e.g. "npm run lint"
 * @param options cwd, env, stdio (default: no stdin, output to ours), timeoutMs (0: none),
 *   stopSignal (what stops it gracefully; default: the signal npm test got, SIGTERM on a timeout),
 *   graceMs (from the stop signal to SIGKILL; default 10 s)
 * @returns the child; `done`, which settles once the step and its group are gone with
 *   { code, signal, timedOut, error } (error: it could not be started); and `stop(signal, graceMs)`,
 *   which stops it as a timeout does
 */
export function startStep(label, command, args, options = {}) {
  const { cwd, env, stdio = ["ignore", "inherit", "inherit"], timeoutMs = 0, stopSignal, graceMs = 10_000 } = options;
  const child = spawn(command, args, { cwd, env, stdio, detached: true });
  let timedOut = false;
  let killTimer;
  const step = {
    label,
    pid: child.pid,
    stopSignal,
    stopping: false,
    /** The stop signal to the group, then SIGKILL to everything of the step after the grace period. */
    stop(signal, grace = graceMs) {
      if (step.stopping) return;
      step.stopping = true;
      signalGroup(child.pid, signal);
      killTimer = setTimeout(() => {
        say(`${label} (pid ${child.pid}) is still running ${grace / 1000} s after ${signal}; killing it`);
        killAll(child.pid);
      }, grace);
    },
  };
  const timer =
    timeoutMs > 0
      ? setTimeout(() => {
          timedOut = true;
          say(`${label} timed out after ${formatDuration(timeoutMs)}; stopping it`);
          step.stop(stopSignal ?? "SIGTERM");
        }, timeoutMs)
      : undefined;
  const done = new Promise((resolve) => {
    let settled = false;
    const settle = (result) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      running.delete(step);
      resolve(result);
    };
    child.on("error", (error) => {
      // Spawning failed (ENOENT, EACCES): there is no process to wait for.
      if (child.pid === undefined) settle({ code: null, signal: null, timedOut, error });
    });
    child.once("exit", async (code, signal) => {
      clearTimeout(timer); // the limit is on the step's first process; leftovers get graceMs below
      await sweepGroup(step, graceMs);
      clearTimeout(killTimer);
      settle({ code, signal, timedOut, error: null });
    });
  });
  if (child.pid !== undefined) running.add(step);
  return { child, done, stop: (signal = "SIGTERM", grace = graceMs) => step.stop(signal, grace) };
}

/** startStep(...).done: for a step that needs nothing but its result. */
export function runStep(label, command, args, options) {
  return startStep(label, command, args, options).done;
}

/** After the step's first process exited: stops what is left of its group and waits until it is gone. */
async function sweepGroup(step, graceMs) {
  if (!groupAlive(step.pid)) return;
  if (!step.stopping) {
    const left = processTable()?.filter((p) => p.pgrp === step.pid && !p.zombie) ?? [];
    say(`${step.label} left processes running (${left.map((p) => `pid ${p.pid}`).join(", ") || "its group"}); stopping them`);
    step.stop(step.stopSignal ?? "SIGTERM");
  }
  // The kill timer set by stop() ends the wait at the latest graceMs after the stop signal.
  await until(() => !groupAlive(step.pid), graceMs + 5_000);
}

/** The processes of group `pgid` and every process descended from one of them, by PID. */
export function stepProcesses(pgid, table) {
  const found = new Set(table.filter((p) => p.pgrp === pgid || p.pid === pgid).map((p) => p.pid));
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of table) {
      if (!found.has(p.pid) && found.has(p.ppid)) {
        found.add(p.pid);
        grew = true;
      }
    }
  }
  found.delete(process.pid);
  return [...found];
}

/** Every process of the step, SIGKILLed: its group, and its descendants that have groups of their own. */
function killAll(pgid) {
  const table = processTable();
  for (const pid of table ? stepProcesses(pgid, table) : []) trySignal(pid, "SIGKILL");
  signalGroup(pgid, "SIGKILL");
}

function signalGroup(pgid, signal) {
  trySignal(-pgid, signal);
}

function trySignal(pid, signal) {
  try {
    process.kill(pid, signal);
  } catch {
    // gone already
  }
}

/** Whether any live (not zombie) process is in group `pgid`. */
function groupAlive(pgid) {
  const table = processTable();
  if (table) return table.some((p) => p.pgrp === pgid && !p.zombie);
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
}

/** pid, ppid, process group and zombie state of every process (Linux /proc); null elsewhere. */
function processTable() {
  if (process.platform !== "linux") return null;
  const table = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so read after the last ")".
    const [state, ppid, pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    table.push({ pid: Number(name), ppid: Number(ppid), pgrp: Number(pgrp), zombie: state === "Z" });
  }
  return table;
}

/** Polls `condition` every 100 ms; false if it still fails after `timeoutMs`. */
async function until(condition, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
}

export function formatDuration(ms) {
  return ms >= 60_000 ? `${Math.round(ms / 60_000)} min` : `${(ms / 1000).toFixed(1)} s`;
}
