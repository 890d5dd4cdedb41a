// Shared helpers for the meridian-sim CLI tests: run the bin as a child process, as the console does.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

const BIN = fileURLToPath(new URL("../bin/meridian-sim.mjs", import.meta.url));
/** 20 s of the bundled fixture keeps each run well under a second of simulation. */
export const SMALL_WINDOW = ["--trace", "bundled", "--from-ms", "0", "--to-ms", "20000"];

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the bin. Async, so independent invocations run side by side: tsx startup dominates their time. */
export function runCli(args: readonly string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { encoding: "utf8", timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : null) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}
