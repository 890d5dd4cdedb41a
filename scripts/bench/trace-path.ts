// Which trace a sim bench runs on. The default path (the conversation trace beside the repository)
// falls back to the bundled 500-row fixture, so `npm run bench:sim` runs in a checkout without it and
// says so. A path given with --trace never does: a typo in a held-out re-run printed a full JSON for
// the fixture and exited 0.

import { existsSync } from "node:fs";
import { basename } from "node:path";
import { bundledTracePath } from "@meridian/workload";
import { flag, hasFlag } from "./flags";

export type TraceChoice = { path: string; note?: string } | { error: string };

/** The trace to load: `given` (from --trace) only if it exists; otherwise the default, or the fixture with a note. */
export function chooseTrace(
  given: string | undefined,
  isGiven: boolean,
  defaultPath: string,
  fallback: string,
  exists: (path: string) => boolean = existsSync,
): TraceChoice {
  if (isGiven) {
    if (given === undefined || given === "" || given.startsWith("--")) return { error: "--trace: expected a path, got no value" };
    return exists(given) ? { path: given } : { error: `--trace: ${given} not found` };
  }
  return exists(defaultPath) ? { path: defaultPath } : { path: fallback, note: `trace ${defaultPath} not found; using the bundled fixture` };
}

/** --trace, or the default with the fixture fallback; a missing --trace exits 1 with one line on stderr. */
export function benchTrace(defaultPath: string): { path: string; note?: string } {
  const choice = chooseTrace(flag("trace"), hasFlag("trace"), defaultPath, bundledTracePath());
  if ("error" in choice) {
    process.stderr.write(`${basename(process.argv[1] ?? "bench")}: error: ${choice.error}\n`);
    process.exit(1);
  }
  return choice;
}
