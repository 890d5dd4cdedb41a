// The meridian-sim child process of an experiment: how it is started (tied to the console's life)
// and how its stderr reads: progress lines, and the line that says why a failed run failed.
import "server-only";
import { type ChildProcess, spawn } from "node:child_process";
// Tied to the console's life as the demo fleet's children are (lib/tied-to-parent.ts): a console
// killed outright (SIGKILL, the OOM killer) must not leave its simulations running. The simulator
// is CPU-bound and synchronous, so it cannot watch its parent itself: the kernel tells it.
import { commandLine } from "../../lib/tied-to-parent";

/** Progress in [0, 1] from one stderr line of meridian-sim: "progress DONE/TOTAL LABEL" (DONE
 * counts over all policies of the run). Also reads "42%" and "progress 0.42"; null otherwise. */
export function parseProgress(line: string): number | null {
  const ratio = /\bprogress\s+([0-9]+)\s*\/\s*([0-9]+)/i.exec(line) ?? /\b([0-9]+)\s*\/\s*([0-9]+)\b/.exec(line);
  if (ratio && Number(ratio[2]) > 0) return Math.min(1, Number(ratio[1]) / Number(ratio[2]));
  const percent = /([0-9]+(?:\.[0-9]+)?)\s*%/.exec(line);
  if (percent) return Math.min(1, Number(percent[1]) / 100);
  const fraction = /\bprogress\s+(0?\.[0-9]+|1(?:\.0+)?|0)\b/i.exec(line);
  if (fraction) return Number(fraction[1]);
  return null;
}

/** Starts the simulator; its stdout and stderr are piped to the console. */
export function spawnSim(spec: { command: string; args: string[]; cwd: string }): ChildProcess {
  const { command, args } = commandLine(spec);
  return spawn(command, args, { cwd: spec.cwd, stdio: ["ignore", "pipe", "pipe"] });
}

/** The prefix of every error line meridian-sim prints (cli/main.ts): "meridian-sim: error: …" for
 * a usage error (exit 2), "meridian-sim: unexpected error: Name: message" (then its stack) otherwise. */
const SIM_ERROR = /^meridian-sim:/;
/** A stack frame ("    at fn (file:1:2)"): never the reason a run failed. */
const STACK_FRAME = /^at\s/;
/** What V8 prints around a fatal error and that names no cause: its banners ("<--- Last few GCs --->",
 * "----- Native stack trace -----"), GC trace lines ("[29360:0x16223e20]  156 ms: Mark-Compact …") and
 * native stack frames (" 1: 0xb78db3 node::OOMErrorHandler…"). An out-of-memory run prints the GC
 * banner first, so without this its message was that banner. */
const V8_NOISE = /^(<---.*--->$|-{3,}.*-{3,}$|\[\d+:0x[0-9a-f]+\]|\d+: 0x[0-9a-f]+\b)/i;
/** A line that states the error: Node's fatal error ("FATAL ERROR: Reached heap limit Allocation
 * failed - JavaScript heap out of memory") or an uncaught error's first line ("TypeError: …",
 * "Error [ERR_MODULE_NOT_FOUND]: Cannot find module …"), which Node prints after the source line it
 * points at. */
const ERROR_LINE = /^(FATAL ERROR:|\w*Error\b[^:]*:)/;

/**
 * Follows the simulator's stderr line by line: reports progress, and keeps the line that explains a
 * failure: the CLI's own error line, else Node's error line (a fatal error such as running out of
 * heap, an uncaught error), else the first other line (a warning), never a progress line, a stack
 * frame or V8's GC trace, which say nothing about why the run ended.
 */
export class SimStderr {
  private partial = "";
  private simError: string | null = null;
  private errorLine: string | null = null;
  private firstOther: string | null = null;

  constructor(private readonly onProgress: (progress: number) => void) {}

  write(chunk: string): void {
    const lines = (this.partial + chunk).split("\n");
    this.partial = (lines.pop() ?? "").slice(-8_192);
    for (const line of lines) this.line(line);
  }

  /** Why a run that ended with this exit code or signal failed, in one line. */
  failure(code: number | null, signal: NodeJS.Signals | null): string {
    if (this.partial) this.line(this.partial);
    this.partial = "";
    if (signal !== null) {
      const detail = this.simError ?? this.errorLine ?? this.firstOther;
      return `the simulator was killed (${signal})${detail ? `: ${detail}` : ""}`;
    }
    if (this.simError !== null) return this.simError;
    const detail = this.errorLine ?? this.firstOther;
    return `the simulator exited with code ${code}${detail ? `: ${detail}` : ""}`;
  }

  private line(raw: string): void {
    const line = raw.trim();
    if (!line || V8_NOISE.test(line)) return;
    if (SIM_ERROR.test(line)) {
      this.simError = line;
      return;
    }
    const progress = parseProgress(line);
    if (progress !== null) {
      this.onProgress(progress);
      return;
    }
    if (STACK_FRAME.test(line)) return;
    if (this.errorLine === null && ERROR_LINE.test(line)) this.errorLine = line.slice(0, 500);
    this.firstOther ??= line.slice(0, 500);
  }
}
