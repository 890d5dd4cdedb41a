// supervisor: keeps named child processes running for `npm start` (the console, the demo fleet)
// and for the demo fleet (its engines and LBs). Not a CLI; imported by scripts/start.mjs and
// scripts/demo-fleet.ts. Prints nothing itself: every start, exit, scheduled restart and give-up is
// reported through `onEvent`, and the caller words it.
//
// Restart rule
// - A child that exits while the supervisor is not stopping is started again after a delay that
//   doubles with each consecutive failure: initialDelayMs, 2x, 4x, ... capped at maxDelayMs.
// - A child that stayed up for stableAfterMs counts as having started: its failure streak and
//   backoff start over at its next exit, and it is restarted for as long as the supervisor runs
//   (a console that crashed after an hour must come back, and the data plane must keep running).
// - A child that never stayed up is given up on after giveUpAfter quick exits in a row: that is a
//   setup error (a port in use, a bad environment) and the caller should say so and stop. An exit
//   code listed in the child's fatalExitCodes gives up on such a child at once.
// - Uptime is measured on the monotonic clock (performance.now()), not the wall clock: a clock
//   stepped forward would make a crash-looping child look stable (never given up on), one stepped
//   back a stable child look like a quick exit.
// - stop() cancels pending restarts, sends SIGTERM to each running child by PID, SIGKILL after
//   graceMs, and resolves when every child has exited. Children it did not start are never touched.
// - No child outlives the supervisor, even one killed outright (SIGKILL, the OOM killer): on Linux
//   each child is started through setpriv(1) --pdeathsig, so the kernel sends it SIGTERM when the
//   supervisor's process dies. Node cannot set PR_SET_PDEATHSIG itself, and Linux tells a child
//   nothing otherwise. Without setpriv (another OS) a supervisor killed outright leaves its children.
import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";
import { commandLine } from "../../apps/console/src/lib/tied-to-parent";

export interface RestartPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
  stableAfterMs: number;
  giveUpAfter: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = { initialDelayMs: 500, maxDelayMs: 30_000, stableAfterMs: 10_000, giveUpAfter: 5 };

export interface ChildSpec {
  /** Unique within one supervisor; names the child in every event. */
  name: string;
  command: string;
  args: readonly string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Default: stdin ignored, stdout and stderr inherited. */
  stdio?: StdioOptions;
  /** Exit codes that mean "this cannot work" (a bad config): a child that never stayed up and exits
   * with one is given up on at once instead of after giveUpAfter tries. */
  fatalExitCodes?: readonly number[];
}

export type SupervisorEvent =
  | { kind: "started"; name: string; pid: number; restarts: number }
  | { kind: "exited"; name: string; pid: number; code: number | null; signal: NodeJS.Signals | null; uptimeMs: number }
  | { kind: "restart-scheduled"; name: string; delayMs: number; failures: number }
  /** `fatal`: the last exit status was one of the child's fatalExitCodes. */
  | { kind: "gave-up"; name: string; failures: number; fatal: boolean }
  | { kind: "spawn-failed"; name: string; error: string };

export interface ChildStatus {
  name: string;
  pid: number | null;
  running: boolean;
  /** How many times the child was started again after an exit. */
  restarts: number;
  gaveUp: boolean;
}

/** Delay before restart number `failures` (1 = the first restart after a failure). */
export function backoffDelayMs(policy: Pick<RestartPolicy, "initialDelayMs" | "maxDelayMs">, failures: number): number {
  const exponent = Math.max(0, failures - 1);
  return Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.min(exponent, 30));
}

interface Supervised {
  spec: ChildSpec;
  child: ChildProcess | null;
  startedAt: number;
  restarts: number;
  /** Consecutive exits since the child last stayed up for stableAfterMs. */
  failures: number;
  everStable: boolean;
  gaveUp: boolean;
  timer: NodeJS.Timeout | null;
}

export class Supervisor {
  private readonly children = new Map<string, Supervised>();
  private stopping = false;

  constructor(
    private readonly policy: RestartPolicy = DEFAULT_RESTART_POLICY,
    private readonly onEvent: (event: SupervisorEvent) => void = () => undefined,
  ) {}

  /** Starts a child and keeps it running. */
  add(spec: ChildSpec): void {
    if (this.children.has(spec.name)) throw new Error(`supervisor: a child named "${spec.name}" is already supervised`);
    if (this.stopping) throw new Error("supervisor: stopping; no new children");
    const entry: Supervised = { spec, child: null, startedAt: 0, restarts: 0, failures: 0, everStable: false, gaveUp: false, timer: null };
    this.children.set(spec.name, entry);
    this.launch(entry);
  }

  status(name: string): ChildStatus | null {
    const entry = this.children.get(name);
    if (!entry) return null;
    const child = entry.child;
    return {
      name,
      pid: child?.pid ?? null,
      running: child !== null && child.exitCode === null && child.signalCode === null,
      restarts: entry.restarts,
      gaveUp: entry.gaveUp,
    };
  }

  names(): string[] {
    return [...this.children.keys()];
  }

  /**
   * Stops the children named in `only` (default: every child) by PID (SIGTERM, then SIGKILL after
   * graceMs); resolves when they have exited. From the first call on, no child is restarted.
   */
  async stop(graceMs = 8_000, only?: readonly string[]): Promise<void> {
    this.stopping = true;
    const waits: Promise<void>[] = [];
    for (const [name, entry] of this.children) {
      if (only && !only.includes(name)) continue;
      if (entry.timer) clearTimeout(entry.timer);
      entry.timer = null;
      const child = entry.child;
      if (!child || child.exitCode !== null || child.signalCode !== null) continue;
      waits.push(
        new Promise<void>((done) => {
          const force = setTimeout(() => child.kill("SIGKILL"), graceMs);
          child.once("exit", () => {
            clearTimeout(force);
            done();
          });
          child.kill("SIGTERM");
        }),
      );
    }
    await Promise.all(waits);
  }

  private launch(entry: Supervised): void {
    entry.timer = null;
    if (this.stopping) return;
    const { spec } = entry;
    let child: ChildProcess;
    try {
      const { command, args } = commandLine(spec);
      child = spawn(command, args, { cwd: spec.cwd, env: spec.env ?? process.env, stdio: spec.stdio ?? ["ignore", "inherit", "inherit"] });
    } catch (error) {
      this.onEvent({ kind: "spawn-failed", name: spec.name, error: error instanceof Error ? error.message : String(error) });
      this.afterExit(entry, 0);
      return;
    }
    entry.child = child;
    entry.startedAt = performance.now();
    let ended = false;
    // An executable that cannot be spawned emits "error" and no "exit"; count it as a quick exit.
    child.once("error", (error) => {
      if (child.pid !== undefined || ended) return;
      ended = true;
      this.onEvent({ kind: "spawn-failed", name: spec.name, error: error.message });
      this.afterExit(entry, 0);
    });
    child.once("exit", (code, signal) => {
      if (ended) return;
      ended = true;
      const uptimeMs = performance.now() - entry.startedAt;
      this.onEvent({ kind: "exited", name: spec.name, pid: child.pid ?? -1, code, signal, uptimeMs });
      this.afterExit(entry, uptimeMs, code !== null && (spec.fatalExitCodes ?? []).includes(code));
    });
    if (child.pid !== undefined) this.onEvent({ kind: "started", name: spec.name, pid: child.pid, restarts: entry.restarts });
  }

  private afterExit(entry: Supervised, uptimeMs: number, fatal = false): void {
    if (this.stopping) return;
    if (uptimeMs >= this.policy.stableAfterMs) {
      entry.everStable = true;
      entry.failures = 0;
    }
    entry.failures += 1;
    if (!entry.everStable && (fatal || entry.failures >= this.policy.giveUpAfter)) {
      entry.gaveUp = true;
      this.onEvent({ kind: "gave-up", name: entry.spec.name, failures: entry.failures, fatal });
      return;
    }
    const delayMs = backoffDelayMs(this.policy, entry.failures);
    this.onEvent({ kind: "restart-scheduled", name: entry.spec.name, delayMs, failures: entry.failures });
    entry.timer = setTimeout(() => {
      entry.restarts += 1;
      this.launch(entry);
    }, delayMs);
  }
}
