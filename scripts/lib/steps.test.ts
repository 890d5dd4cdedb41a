// start.mjs's setup steps can be stopped (scripts/lib/steps.mjs): stop() ends the running step and
// what it started, and nothing runs after it.
import { strict as assert } from "node:assert";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { StepRunner } from "./steps.mjs";

const dir = mkdtempSync(join(tmpdir(), "meridian-steps-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves once check() holds; fails after timeoutMs. */
async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("a step's exit code is reported; a command that does not exist is an error, not a throw", async () => {
  const steps = new StepRunner();
  assert.deepEqual(await steps.run(process.execPath, ["-e", "process.exit(3)"]), { code: 3, signal: null, stopped: false });
  assert.deepEqual(await steps.run(process.execPath, ["-e", ""]), { code: 0, signal: null, stopped: false });
  const missing = await steps.run("/nonexistent/meridian-step", []);
  assert.equal(missing.code, null);
  assert.match(missing.error ?? "", /ENOENT/);
});

test("stop() ends the running step and what it started, SIGKILL for what ignores SIGTERM; nothing runs after", async () => {
  const steps = new StepRunner();
  const pidsFile = join(dir, "pids.json");
  // The step (standing in for npm) starts two processes of its own (turbo, a build worker), one of
  // which ignores SIGTERM, and writes the three PIDs down once that one has armed its handler.
  const step = `
    const { spawn } = require("node:child_process");
    const { writeFileSync } = require("node:fs");
    const plain = spawn(process.execPath, ["-e", "setInterval(() => {}, 1e6)"], { stdio: "ignore" });
    const stubborn = spawn(process.execPath, ["-e", "process.on('SIGTERM', () => {}); console.log('armed'); setInterval(() => {}, 1e6)"], { stdio: ["ignore", "pipe", "ignore"] });
    stubborn.stdout.once("data", () => writeFileSync(${JSON.stringify(pidsFile)}, JSON.stringify([process.pid, plain.pid, stubborn.pid])));
    setInterval(() => {}, 1e6);`;
  const running = steps.run(process.execPath, ["-e", step]);
  await until("the step's processes", () => existsSync(pidsFile) && readFileSync(pidsFile, "utf8").length > 0);
  const [leader, plain, stubborn] = JSON.parse(readFileSync(pidsFile, "utf8")) as [number, number, number];
  assert.ok([leader, plain, stubborn].every(alive));

  await steps.stop(1_000);
  assert.deepEqual(await running, { code: null, signal: "SIGTERM", stopped: true });
  assert.equal(alive(leader), false);
  // The two the step started were reparented when it exited; each is gone or a zombie awaiting
  // its new parent's reap, so wait for the signal's effect rather than assume an instant.
  await until("the step's own children to be gone", () => !alive(plain) && !alive(stubborn));

  assert.equal(steps.stopped, true);
  assert.deepEqual(await steps.run(process.execPath, ["-e", "process.exit(0)"]), { code: null, signal: null, stopped: true });
});

test("stop() with no step running only keeps further steps from starting", async () => {
  const steps = new StepRunner();
  await steps.stop();
  assert.deepEqual(await steps.run(process.execPath, ["-e", ""]), { code: null, signal: null, stopped: true });
});
