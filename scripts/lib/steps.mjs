// steps: runs `npm start`'s setup steps (install, build, migrate) one at a time so that they can be
// stopped. Not a CLI; imported by scripts/start.mjs (plain ESM, before any dependency is installed).
// Prints nothing of its own; lib/run-step.mjs, which runs each step, says on stderr when a step left
// processes behind or had to be killed.
//
// Why: the steps used to run through spawnSync, which blocks the event loop, so neither Ctrl-C's
// handler nor the parent watch could run until a step (a build takes minutes) had finished; killing
// npm meanwhile left start.mjs to carry on for good.
// Decisions
// - A step is one of `npm test`'s steps (lib/run-step.mjs): its own process group, so stop() reaches
//   everything it started (npm → sh → turbo → next build and its workers) with SIGTERM, then SIGKILL
//   to what is left after the grace period; it ends when its group is empty. No time limit here: a
//   first install or build takes as long as it takes, and the operator is watching.
// - Being in its own group, a step does not get the terminal's Ctrl-C itself; start.mjs's handler
//   stops it. stdin is not the terminal's (a background group reading it would be stopped).
// - Once stopped, the runner starts nothing more: run() resolves at once with `stopped: true`.
import { startStep } from "./run-step.mjs";

export class StepRunner {
  #current = null;
  #stopped = false;

  get stopped() {
    return this.#stopped;
  }

  /** Runs one step to its end. Resolves { code, signal, stopped, error? }; never rejects. */
  async run(command, args, options = {}) {
    if (this.#stopped) return { code: null, signal: null, stopped: true };
    const step = startStep([command, ...args].join(" "), command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: options.stdio ?? ["ignore", "inherit", "inherit"],
    });
    this.#current = step;
    const result = await step.done;
    if (this.#current === step) this.#current = null;
    return { code: result.code, signal: result.signal, stopped: this.#stopped, ...(result.error ? { error: result.error.message } : {}) };
  }

  /** Stops the running step and everything it started; resolves once they have exited (or got SIGKILL). */
  async stop(graceMs = 5_000) {
    this.#stopped = true;
    const current = this.#current;
    if (!current) return;
    current.stop("SIGTERM", graceMs);
    await current.done;
  }
}
