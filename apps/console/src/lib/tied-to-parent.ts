// A child process that dies with its parent: on Linux, util-linux's `setpriv --pdeathsig TERM` execs
// the command with the kernel's parent-death signal set, so a parent killed outright (SIGKILL, the
// OOM killer) leaves no child behind, whatever the child is busy with. The demo fleet's supervisor
// (scripts/lib/supervisor.ts) and the console's experiments (server/runtime/experiment-sim.ts) both
// start their children through it. Node builtins only: no server-only, no client use.
import { existsSync } from "node:fs";
import { isAbsolute } from "node:path";

/** util-linux's setpriv, where there is one. */
const SETPRIV = process.platform === "linux" ? (["/usr/bin/setpriv", "/bin/setpriv"].find((path) => existsSync(path)) ?? null) : null;

/**
 * The command line that starts `spec`: through `setpriv --pdeathsig TERM` when there is a setpriv and
 * the command is an executable that exists (so that a missing one still fails to spawn, and is
 * reported as such, rather than making setpriv exit 127). setpriv execs the command in its own
 * process, so the child's PID is the command's.
 */
export function commandLine(spec: { command: string; args: readonly string[] }, setpriv: string | null = SETPRIV): { command: string; args: string[] } {
  if (setpriv === null || !isAbsolute(spec.command) || !existsSync(spec.command)) return { command: spec.command, args: [...spec.args] };
  return { command: setpriv, args: ["--pdeathsig", "TERM", "--", spec.command, ...spec.args] };
}
