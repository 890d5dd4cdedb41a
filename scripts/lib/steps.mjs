// steps: runs `npm start`'s setup steps (install, build, migrate) one at a time so that they can be
// stopped. Not a CLI; imported by scripts/start.mjs (plain ESM, before any dependency is installed).
// Prints nothing.
//
// Why: the steps used to run through spawnSync, which blocks the event loop, so neither Ctrl-C's
// handler nor the parent watch could run until a step (a build takes minutes) had finished; killing
// npm meanwhile left start.mjs to carry on for good.
// Decisions
// - Each step runs in a process group of its own (detached), so stop() reaches everything the step
//   started (npm → sh → turbo → next build and its workers) with one signal to the group: SIGTERM,
//   then SIGKILL to what is left of the group after graceMs. The group's ID is the step's PID.
// - Being in its own group, a step does not get the terminal's Ctrl-C itself; start.mjs's handler
//   stops it. stdin is not the terminal's (a background group reading it would be stopped).
// - Once stopped, the runner starts nothing more: run() resolves at once with `stopped: true`.
import { spawn } from "node:child_process";

export class StepRunner {
  #current = null;
  #stopped = false;

  get stopped() {
    return this.#stopped;
  }

  /** Runs one step to its end. Resolves { code, signal, stopped, error? }; never rejects. */
  run(command, args, options = {}) {
    if (this.#stopped) return Promise.resolve({ code: null, signal: null, stopped: true });
    return new Promise((resolve) => {
      let child;
      try {
        child = spawn(command, args, { ...options, stdio: options.stdio ?? ["ignore", "inherit", "inherit"], detached: true });
      } catch (error) {
        resolve({ code: null, signal: null, stopped: false, error: error.message });
        return;
      }
      const exited = new Promise((done) => {
        let ended = false;
        child.once("error", (error) => {
          if (ended || child.pid !== undefined) return;
          ended = true;
          done({ code: null, signal: null, stopped: this.#stopped, error: error.message });
        });
        child.once("exit", (code, signal) => {
          if (ended) return;
          ended = true;
          done({ code, signal, stopped: this.#stopped });
        });
      });
      this.#current = { child, exited };
      exited.then((result) => {
        if (this.#current?.child === child) this.#current = null;
        resolve(result);
      });
    });
  }

  /** Stops the running step and everything it started; resolves once they have exited (or got SIGKILL). */
  async stop(graceMs = 5_000) {
    this.#stopped = true;
    const current = this.#current;
    if (!current || current.child.pid === undefined) return;
    const group = -current.child.pid;
    const signal = (name) => {
      try {
        process.kill(group, name);
      } catch {
        // the group is gone already
      }
    };
    const deadline = Date.now() + graceMs;
    signal("SIGTERM");
    const force = setTimeout(() => signal("SIGKILL"), graceMs);
    await current.exited;
    // What the step started can outlive it (a worker that ignores SIGTERM): give the rest of the
    // group the same grace, then SIGKILL what is left.
    while (groupExists(group) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    clearTimeout(force);
    if (groupExists(group)) signal("SIGKILL");
  }
}

function groupExists(group) {
  try {
    process.kill(group, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
}
