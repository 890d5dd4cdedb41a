// npm start's refusals that must come before it touches anything: a second run on a busy console
// port exits 2 at once, before the install and build steps (a build would rewrite the .next
// directory the first run serves from); so does a second run in the same checkout while the first is
// still starting up (it holds neither the port nor a fleet lock yet), and says who holds the lock,
// since when and in which step. A run lock left by a run killed outright does not block the next one.
import { strict as assert } from "node:assert";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { once } from "node:events";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

const dirs: string[] = [];
const runs: ChildProcessWithoutNullStreams[] = [];
after(async () => {
  // SIGTERM, by PID: start.mjs stops its running step (the fake build) before it exits.
  for (const run of runs) if (run.exitCode === null && run.signalCode === null) run.kill("SIGTERM");
  await Promise.all(runs.map((run) => (run.exitCode === null && run.signalCode === null ? once(run, "exit") : null)));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A port on 127.0.0.1 held by a server until `close()`. */
async function busyPort(): Promise<{ port: number; close: () => void }> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { port: (server.address() as { port: number }).port, close: () => server.close() };
}

/** A port on 127.0.0.1 that was free a moment ago. */
async function freePort(): Promise<number> {
  const { port, close } = await busyPort();
  close();
  return port;
}

/**
 * A checkout in a temporary directory: this repository's scripts/, its dependencies (linked; no
 * package-lock.json, and an install stamp, so the install step is skipped and writes nothing here)
 * and a fake `npm` on PATH whose `npm run build` says so and then runs until it is stopped.
 */
function fakeCheckout(): { dir: string; env: NodeJS.ProcessEnv } {
  const dir = mkdtempSync(join(tmpdir(), "meridian-start-"));
  dirs.push(dir);
  cpSync(join(root, "scripts"), join(dir, "scripts"), { recursive: true });
  cpSync(join(root, "package.json"), join(dir, "package.json"));
  mkdirSync(join(dir, "apps", "console", "src", "lib"), { recursive: true });
  // The console's modules the scripts import (demo state paths; the supervisor's parent-death rule).
  for (const file of ["demo-files.ts", "tied-to-parent.ts"])
    cpSync(join(root, "apps", "console", "src", "lib", file), join(dir, "apps", "console", "src", "lib", file));
  mkdirSync(join(dir, "node_modules"));
  for (const name of readdirSync(join(root, "node_modules"))) symlinkSync(join(root, "node_modules", name), join(dir, "node_modules", name));
  writeFileSync(join(dir, "node_modules", ".meridian-install-stamp"), "no-lock");
  mkdirSync(join(dir, "bin"));
  // Bounded, so that a fake build whose start.mjs was killed outright does not linger.
  writeFileSync(join(dir, "bin", "npm"), '#!/bin/sh\necho "fake npm $* running (pid $$)"\nexec sleep 120\n');
  chmodSync(join(dir, "bin", "npm"), 0o755);
  const env = { ...process.env, PATH: `${join(dir, "bin")}:${process.env.PATH}`, MERIDIAN_DEMO: "0", MERIDIAN_DB_PATH: join(dir, "data", "meridian.db") };
  return { dir, env };
}

/** What start.mjs prints as it starts the install or the build step (the fake build prints "fake npm"). */
const STEP = /\[meridian\] (installing dependencies|building \(npm run build\))|fake npm/;

/** Starts `scripts/start.mjs` of `dir`; `output()` is everything it printed so far ("close": all of it). */
function start(dir: string, env: NodeJS.ProcessEnv): { run: ChildProcessWithoutNullStreams; output: () => string; line: (pattern: RegExp) => Promise<string> } {
  const run = spawn(process.execPath, [join(dir, "scripts", "start.mjs")], { cwd: dir, env, stdio: ["pipe", "pipe", "pipe"] });
  run.stdin.end();
  runs.push(run);
  let output = "";
  run.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const lines = createInterface({ input: run.stdout });
  const waiting: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  const seen: string[] = [];
  lines.on("line", (text) => {
    output += `${text}\n`;
    seen.push(text);
    for (const w of waiting.filter((w) => w.pattern.test(text))) {
      waiting.splice(waiting.indexOf(w), 1);
      w.resolve(text);
    }
  });
  /** The first line matching `pattern`; rejects if the run exits first. */
  const line = (pattern: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const found = seen.find((text) => pattern.test(text));
      if (found !== undefined) return resolve(found);
      waiting.push({ pattern, resolve });
      run.once("close", (code, signal) => reject(new Error(`start.mjs exited (${signal ?? code}) before printing ${pattern}:\n${output}`)));
    });
  return { run, output: () => output, line };
}

test("a busy console port ends npm start with exit 2 before it installs or builds", async () => {
  const { port, close } = await busyPort();
  try {
    // The build marker is made stale on purpose by nothing here: whatever its state, the run must
    // not reach the install or build step.
    const child = spawn(process.execPath, [join(root, "scripts", "start.mjs")], {
      cwd: root,
      env: { ...process.env, MERIDIAN_PORT: String(port), MERIDIAN_DEMO: "0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const [code] = (await once(child, "exit")) as [number | null];
    assert.equal(code, 2, output);
    assert.match(output, new RegExp(`port ${port} is in use; set MERIDIAN_PORT`));
    assert.doesNotMatch(output, /installing|building/, output);
  } finally {
    close();
  }
});

test("a second npm start in the same checkout while the first builds exits 2 at once, before it builds", async () => {
  const { dir, env } = fakeCheckout();
  const first = start(dir, { ...env, MERIDIAN_PORT: String(await freePort()) });
  await first.line(/fake npm run build running/);

  // Another console port and database: only the checkout (its .next directory) is shared.
  const second = start(dir, { ...env, MERIDIAN_PORT: String(await freePort()), MERIDIAN_DB_PATH: join(dir, "data", "second.db") });
  // Whichever comes first: its end, or its build (the old code's outcome, which would run for ever).
  const outcome = await Promise.race([
    once(second.run, "close").then(([code]) => ({ code: code as number | null })),
    second.line(STEP).then(
      (text) => ({ built: text }),
      () => new Promise<never>(() => {}),
    ),
  ]);
  assert.deepEqual(outcome, { code: 2 }, `the second run went on:\n${second.output()}`);
  // Who holds the lock, since when, and in which step (a refusal that named only a PID in CI, minutes
  // after the first run's console answered, left no clue).
  const iso = "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z";
  assert.match(
    second.output(),
    new RegExp(`another npm start \\(pid ${first.run.pid}, holding the lock for [\\d.]+ (s|min) \\(since ${iso}\\)\\) is starting up in this checkout`),
  );
  assert.match(second.output(), new RegExp(`it is building \\(npm run build\\), for [\\d.]+ (s|min) \\(since ${iso}\\)`));
  assert.doesNotMatch(second.output(), STEP);
  assert.equal(first.run.exitCode, null, "the first run keeps going");

  // Stopped, the first run releases the lock, and the fake build is stopped with it.
  first.run.kill("SIGTERM");
  const [code] = await once(first.run, "close");
  assert.equal(code, 0, first.output());
  assert.equal(existsSync(join(dir, ".meridian-start.lock")), false, "the run lock was released");
});

test("a run lock left by a start killed outright (its PID dead, or reused) does not block the next run", async () => {
  const { dir, env } = fakeCheckout();
  const dead = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await once(dead, "exit");
  // A dead PID; then this test's own PID, alive but not a start.mjs.
  for (const leftover of [`${dead.pid}\nstart.mjs\n`, `${process.pid}\nstart.mjs\n1\n`]) {
    writeFileSync(join(dir, ".meridian-start.lock"), leftover);
    const { port, close } = await busyPort();
    try {
      const run = start(dir, { ...env, MERIDIAN_PORT: String(port) });
      const [code] = await once(run.run, "close");
      assert.equal(code, 2, run.output());
      assert.doesNotMatch(run.output(), STEP);
      // Past the run lock, it reached the port check.
      assert.match(run.output(), new RegExp(`port ${port} is in use`));
      assert.equal(existsSync(join(dir, ".meridian-start.lock")), false);
    } finally {
      close();
    }
  }
});
