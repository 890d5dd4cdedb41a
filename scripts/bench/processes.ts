// Child processes for the benchmark scripts (imported by proxy.ts and soak.ts; not run on its own):
// a free loopback port, starting a child (its stderr errors echoed), stopping every child this
// process started by PID, and waiting for an HTTP endpoint to answer 200.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer as createNetServer } from "node:net";
import { fileURLToPath } from "node:url";
import { Pool } from "undici";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

const started: ChildProcess[] = [];

/** Starts a child in the repository root; lines of its stderr that mention an error are echoed, and
 * a child that exits with a failure has the rest of its last stderr echoed too (a refused
 * configuration names itself rather than surfacing as a health-check timeout). */
export function startChild(command: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  started.push(child);
  child.stdout?.resume();
  const name = args[0]?.split("/").pop() ?? command.split("/").pop();
  let tail = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    const text = chunk.toString();
    tail = (tail + text).slice(-2_000);
    if (/error|Error/.test(text)) process.stderr.write(`[${name}] ${text}`);
  });
  child.once("exit", (code) => {
    if (code !== null && code !== 0 && !/error|Error/.test(tail)) process.stderr.write(`[${name}] exited ${code}: ${tail}\n`);
  });
  return child;
}

/** SIGTERM to every child this process started and that still runs, by PID. */
export function stopChildren(): void {
  for (const child of started) {
    if (child.pid !== undefined && child.exitCode === null) {
      try {
        process.kill(child.pid, "SIGTERM");
      } catch {
        // already gone
      }
    }
  }
}

export async function waitHttp(url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const pool = new Pool(new URL(url).origin, { connections: 1 });
  try {
    for (;;) {
      try {
        const response = await pool.request({ method: "GET", path: new URL(url).pathname });
        await response.body.dump();
        if (response.statusCode === 200) return;
      } catch {
        // not up yet
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${url}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await pool.close();
  }
}
