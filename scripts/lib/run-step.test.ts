import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { runStep, startStep, stepProcesses } from "./run-step.mjs";

const linux = process.platform === "linux";

/** Whether `pid` has exited (a zombie waiting for its parent counts as exited). */
function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z") ?? false;
  } catch {
    return true;
  }
}

/** Polls every 20 ms; fails after `timeoutMs` (a bound, not a pacing sleep). */
async function waitFor(condition: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// A step's first process (node -e) that starts a child, runs `then` and prints "<its pid> <the
// child's pid>": once the line is read, the step's signal handlers (in `then`) are in place.
// `childOptions` is spawn()'s options for the child (detached: its own process group).
const withChild = (childCode: string, childOptions: string, then = "") => `
  const { spawn } = require("node:child_process");
  const child = spawn(process.execPath, ["-e", ${JSON.stringify(childCode)}], { stdio: "ignore", ${childOptions} });
  ${then}
  console.log(process.pid + " " + child.pid);`;

/** PIDs the tests started; whatever a failed test left of them is killed at the end. */
const started: number[] = [];
after(() => {
  for (const pid of started) if (!gone(pid)) process.kill(pid, "SIGKILL");
});
// Longer than a node process takes to start and print on a loaded 2-core CI machine, so that a
// step's timeout fires after it has installed its signal handlers.
const SLOW_START_MS = 2_000;
const FOREVER = "setInterval(() => {}, 1e6)";
const DEAF_FOREVER = `process.on("SIGTERM", () => {}); process.on("SIGINT", () => {}); ${FOREVER}`;

/** Starts a step that prints PIDs on its first line; returns them with the step's promise. */
async function stepWithPids(code: string, options: Parameters<typeof startStep>[3] = {}) {
  const step = startStep("run-step.test.ts's step", process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "inherit"], ...options });
  const lines = createInterface({ input: step.child.stdout! });
  const line = await new Promise<string>((resolve, reject) => {
    lines.once("line", resolve);
    lines.once("close", () => reject(new Error("the step exited before it printed its PIDs")));
  });
  lines.on("line", () => {});
  const pids = line.split(" ").map(Number);
  started.push(...pids);
  return { done: step.done, pids };
}

describe("runStep", () => {
  test("reports the exit code of a step that ends on its own", async () => {
    assert.deepEqual(await runStep("exits 3", process.execPath, ["-e", "process.exit(3)"], { stdio: "ignore" }), {
      code: 3,
      signal: null,
      timedOut: false,
      error: null,
    });
  });

  test("a command that cannot be started is an error, not a crash", async () => {
    const result = await runStep("missing", "/nonexistent/meridian-binary", [], { stdio: "ignore" });
    assert.equal(result.code, null);
    assert.match(String(result.error?.message), /ENOENT/);
  });

  test("a step past its timeout gets SIGTERM, and one that ignores it is killed with its whole tree", { skip: !linux && "reads /proc" }, async () => {
    // The step ignores SIGTERM; its child does too and sits in a process group of its own (as
    // Playwright's webServer does), out of reach of a signal to the step's group.
    const { done, pids } = await stepWithPids(withChild(DEAF_FOREVER, "detached: true", DEAF_FOREVER), { timeoutMs: SLOW_START_MS, graceMs: 300 });
    const result = await done;
    assert.equal(result.timedOut, true);
    assert.equal(result.signal, "SIGKILL");
    await waitFor(() => pids.every(gone), "the step and its child to be gone");
  });

  test("a step that stops on the signal ends with it, timed out", async () => {
    const { done } = await stepWithPids(`process.on("SIGTERM", () => process.exit(0)); console.log(process.pid); ${FOREVER}`, { timeoutMs: SLOW_START_MS });
    assert.deepEqual(await done, { code: 0, signal: null, timedOut: true, error: null });
  });

  test("processes of its group that outlive the step are stopped before the step counts as done", async () => {
    // The step exits at once and leaves its child (same group) running.
    const { done, pids } = await stepWithPids(withChild(FOREVER, "", "child.unref();"));
    const result = await done;
    assert.equal(result.code, 0);
    assert.ok(gone(pids[1]!), "the leftover child was stopped");
  });
});

describe("stepProcesses", () => {
  test("is the step's group and everything descended from it, whatever its group, and never this process", () => {
    const table = [
      { pid: 100, ppid: process.pid, pgrp: 100, zombie: false }, // the step
      { pid: 101, ppid: 100, pgrp: 100, zombie: false }, // its child
      { pid: 102, ppid: 1, pgrp: 100, zombie: false }, // an orphan still in its group
      { pid: 200, ppid: 101, pgrp: 200, zombie: false }, // a grandchild with a group of its own
      { pid: 201, ppid: 200, pgrp: 200, zombie: false }, // and its child
      { pid: 300, ppid: 1, pgrp: 300, zombie: false }, // unrelated
      { pid: process.pid, ppid: 1, pgrp: 100, zombie: false }, // (this process, were it in the group)
    ];
    assert.deepEqual(stepProcesses(100, table).sort(), [100, 101, 102, 200, 201]);
  });
});

describe("forwardSignals", () => {
  const runStepModule = fileURLToPath(new URL("./run-step.mjs", import.meta.url));

  test("SIGTERM to the runner stops the running step with the step's stop signal, waits for it and ends non-zero", async () => {
    // The runner (as scripts/test.mjs is) runs one step whose stop signal is SIGINT (as Playwright's
    // is); the step reports the signal it got, stops its child (own process group) and exits.
    const stepCode = withChild(
      FOREVER,
      "detached: true",
      `process.on("SIGINT", () => { console.log("step got SIGINT"); process.kill(-child.pid, "SIGTERM"); process.exit(0); }); ${FOREVER}`,
    );
    const runner = `
      const { forwardSignals, interrupted, runStep, signalExitCode } = await import(${JSON.stringify(runStepModule)});
      forwardSignals();
      const result = await runStep("run-step.test.ts's long step", process.execPath, ["-e", ${JSON.stringify(stepCode)}], { stopSignal: "SIGINT", graceMs: 5000 });
      console.log(JSON.stringify({ interrupted: interrupted(), result }));
      process.exit(signalExitCode(interrupted()));`;
    const child = spawn(process.execPath, ["--input-type=module", "-e", runner], { stdio: ["ignore", "pipe", "pipe"] });
    const lines: string[] = [];
    createInterface({ input: child.stdout! }).on("line", (line) => lines.push(line));
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    await waitFor(() => lines.length > 0, "the step's PIDs");
    const pids = lines[0]!.split(" ").map(Number);
    started.push(...pids);
    child.kill("SIGTERM");
    const [code] = (await once(child, "exit")) as [number | null];
    assert.equal(code, 143, stderr);
    assert.deepEqual(lines.slice(1), [
      "step got SIGINT",
      JSON.stringify({ interrupted: "SIGTERM", result: { code: 0, signal: null, timedOut: false, error: null } }),
    ]);
    assert.match(stderr, /SIGTERM: stopping run-step.test.ts's long step \(pid \d+\) and waiting for it/);
    await waitFor(() => pids.every(gone), "the step and its child to be gone");
  });
});
