// Types of run-step.mjs (plain ESM, imported by scripts/test.mjs before anything is built).
import type { ChildProcess, StdioOptions } from "node:child_process";

export interface StepOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  stdio?: StdioOptions;
  timeoutMs?: number;
  stopSignal?: NodeJS.Signals;
  graceMs?: number;
}
export interface StepResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  error: Error | null;
}
export interface ProcessRow {
  pid: number;
  ppid: number;
  pgrp: number;
  zombie: boolean;
}
export function interrupted(): NodeJS.Signals | null;
export function signalExitCode(signal: NodeJS.Signals): number;
export function forwardSignals(): void;
export function interrupt(signal: NodeJS.Signals): void;
export interface RunningStep {
  child: ChildProcess;
  done: Promise<StepResult>;
  stop(signal?: NodeJS.Signals, graceMs?: number): void;
}
export function startStep(label: string, command: string, args: readonly string[], options?: StepOptions): RunningStep;
export function runStep(label: string, command: string, args: readonly string[], options?: StepOptions): Promise<StepResult>;
export function stepProcesses(pgid: number, table: readonly ProcessRow[]): number[];
export function formatDuration(ms: number): string;
