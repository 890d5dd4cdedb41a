// Types of steps.mjs (plain ESM so that start.mjs can run its steps before any dependency is installed).
import type { SpawnOptions } from "node:child_process";

export interface StepResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The runner was stopped (before or while this step ran). */
  stopped: boolean;
  /** The command could not be started. */
  error?: string;
}

export class StepRunner {
  get stopped(): boolean;
  run(command: string, args: readonly string[], options?: Omit<SpawnOptions, "detached">): Promise<StepResult>;
  stop(graceMs?: number): Promise<void>;
}
