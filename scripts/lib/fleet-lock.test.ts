// One demo fleet per state directory (scripts/lib/fleet-lock.ts, on fleet-lock.core.mjs): a live
// fleet's lock is refused with its PID; a lock whose PID is dead, alive but not a fleet, alive but
// started after the lock was written (reused by another fleet), or this very process's own (a PID
// given again after a container restart) is replaced; of several fleets racing for one stale lock
// exactly one gets it. What the holder says it is doing (note()) reaches whoever is refused.
import { strict as assert } from "node:assert";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { after, test } from "node:test";
import { acquireFleetLock, fleetLockPath, lockHolder } from "./fleet-lock";
import { acquirePidLock, pidLockHolder, processStartTime } from "./fleet-lock.core.mjs";

const lockModule = fileURLToPath(new URL("./fleet-lock.ts", import.meta.url));
const dirs: string[] = [];
const children: ChildProcess[] = [];
after(() => {
  for (const child of children) child.kill("SIGKILL");
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "meridian-fleet-lock-"));
  dirs.push(dir);
  return dir;
}

/** A live process whose command line carries `words` (a stand-in for a fleet, or for anything else). */
async function sleeper(...words: string[]): Promise<ChildProcess & { pid: number }> {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1e6); console.log('up')", "--", ...words], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  await once(createInterface({ input: child.stdout! }), "line");
  return child as ChildProcess & { pid: number };
}

/** The PID of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await once(child, "exit");
  return child.pid!;
}

const hasProc = existsSync("/proc/self/cmdline");

/** What a lock taken by `pid` holds: its PID, marker and (where /proc has it) start time. */
function lockText(pid: number, marker: string): string {
  const start = processStartTime(pid);
  return `${pid}\n${marker}\n${start === null ? "" : `${start}\n`}`;
}

test("a live fleet's lock is refused with its PID; once released, the next fleet takes it", async () => {
  const dir = stateDir();
  const fleet = await sleeper("demo-fleet");
  const first = acquireFleetLock(dir, { pid: fleet.pid });
  assert.ok(first.ok);
  assert.equal(first.replaced, null);
  assert.equal(readFileSync(fleetLockPath(dir), "utf8"), lockText(fleet.pid, "demo-fleet"));
  assert.equal(lockHolder(dir), fleet.pid);

  assert.deepEqual(acquireFleetLock(dir, { marker: "fleet-lock" }), { ok: false, holder: fleet.pid });
  assert.equal(readFileSync(fleetLockPath(dir), "utf8"), lockText(fleet.pid, "demo-fleet"), "the refused fleet left the lock as it was");

  first.lock.release();
  assert.equal(lockHolder(dir), null);
  const second = acquireFleetLock(dir, { marker: "fleet-lock" });
  assert.ok(second.ok);
  assert.equal(lockHolder(dir), process.pid);
  second.lock.release();
  assert.deepEqual(readdirSync(dir), [], "no lock and no temporary file left behind");
});

test("a lock whose PID is dead is stale and replaced", async () => {
  const dir = stateDir();
  const dead = await deadPid();
  writeFileSync(fleetLockPath(dir), `${dead}\ndemo-fleet\n`);
  assert.equal(lockHolder(dir), null);
  const attempt = acquireFleetLock(dir, { marker: "fleet-lock" });
  assert.ok(attempt.ok);
  assert.equal(attempt.replaced, dead);
  assert.equal(readFileSync(fleetLockPath(dir), "utf8"), lockText(process.pid, "fleet-lock"));
  attempt.lock.release();
});

// The container case: a fleet killed outright left its lock, and the next fleet was given the same
// PID (the PID namespace restarted). Its command line carries the marker too; it must not refuse itself.
test("a leftover lock naming this process's own PID is stale: replaced, and no holder", () => {
  const dir = stateDir();
  for (const leftover of [`${process.pid}\nfleet-lock\n`, `${process.pid}\nfleet-lock\n1\n`]) {
    writeFileSync(fleetLockPath(dir), leftover);
    assert.equal(lockHolder(dir), null, `lockHolder took ${JSON.stringify(leftover)} for a live fleet`);
    const attempt = acquireFleetLock(dir, { marker: "fleet-lock" });
    assert.ok(attempt.ok, `refused itself: ${JSON.stringify(attempt)} (our pid is ${process.pid})`);
    assert.equal(attempt.replaced, process.pid);
    // Taken now: this process holds it, and a second attempt from here is told so.
    assert.equal(lockHolder(dir), process.pid);
    assert.deepEqual(acquireFleetLock(dir, { marker: "fleet-lock" }), { ok: false, holder: process.pid });
    attempt.lock.release();
    assert.deepEqual(readdirSync(dir), []);
  }
});

test("a lock whose PID was reused by another fleet (it started after the lock was written) is stale", { skip: !hasProc }, async () => {
  const dir = stateDir();
  const fleet = await sleeper("demo-fleet");
  const start = processStartTime(fleet.pid);
  assert.match(String(start), /^\d+$/);
  // Its own lock (the right start time) is live ...
  writeFileSync(fleetLockPath(dir), `${fleet.pid}\ndemo-fleet\n${start}\n`);
  assert.equal(lockHolder(dir), fleet.pid);
  // ... a lock written by an earlier process with that PID is not, though this one is a fleet too.
  writeFileSync(fleetLockPath(dir), `${fleet.pid}\ndemo-fleet\n${Number(start) - 1}\n`);
  assert.equal(lockHolder(dir), null);
  const attempt = acquireFleetLock(dir, { marker: "fleet-lock" });
  assert.ok(attempt.ok, JSON.stringify(attempt));
  assert.equal(attempt.replaced, fleet.pid);
  assert.equal(fleet.exitCode, null, "the process the stale lock named is left alone");
  attempt.lock.release();
});

test("processStartTime reads field 22 past a command name with spaces and parentheses", { skip: !hasProc }, async () => {
  const code = "process.stdin.once('data', () => { process.title = 'x) (y z 1 2'; console.log('titled') }); console.log('up')";
  const child = spawn(process.execPath, ["-e", code], { stdio: ["pipe", "pipe", "inherit"] });
  children.push(child);
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  assert.equal((await lines.next()).value, "up");
  const before = processStartTime(child.pid!);
  child.stdin!.write("go\n");
  assert.equal((await lines.next()).value, "titled");
  assert.match(readFileSync(`/proc/${child.pid}/stat`, "utf8"), /\(x\) \(y z 1 2\)/);
  assert.match(String(before), /^\d+$/);
  assert.equal(processStartTime(child.pid!), before);
  assert.equal(processStartTime(await deadPid()), null);
});

test("a lock whose PID now belongs to something that is not a fleet is stale and replaced", { skip: !hasProc }, async () => {
  const dir = stateDir();
  const other = await sleeper("something-else");
  writeFileSync(fleetLockPath(dir), `${other.pid}\ndemo-fleet\n`);
  assert.equal(lockHolder(dir), null);
  const attempt = acquireFleetLock(dir, { marker: "fleet-lock" });
  assert.ok(attempt.ok);
  assert.equal(attempt.replaced, other.pid);
  assert.equal(other.exitCode, null, "the process the stale lock named is left alone");
});

test("release() leaves a lock that names another process", async () => {
  const dir = stateDir();
  const attempt = acquireFleetLock(dir, { marker: "fleet-lock" });
  assert.ok(attempt.ok);
  const fleet = await sleeper("demo-fleet");
  writeFileSync(fleetLockPath(dir), `${fleet.pid}\ndemo-fleet\n`);
  attempt.lock.release();
  assert.equal(lockHolder(dir), fleet.pid);
});

test("of several fleets racing for one stale lock, exactly one takes it and the others name it", { skip: !hasProc }, async () => {
  const dir = stateDir();
  writeFileSync(fleetLockPath(dir), `${await deadPid()}\ndemo-fleet\n`);
  // Each contender loads the module, says "ready", tries on "go", prints the outcome and then holds on
  // (a winner that exited would leave a stale lock) until its stdin closes.
  const code = `
    const { acquireFleetLock } = await import(${JSON.stringify(lockModule)});
    const { createInterface } = await import("node:readline");
    const lines = createInterface({ input: process.stdin });
    console.log("ready");
    lines.once("line", () => {
      const attempt = acquireFleetLock(${JSON.stringify(dir)});
      console.log(JSON.stringify(attempt.ok ? { won: process.pid } : { holder: attempt.holder }));
    });
    lines.once("close", () => process.exit(0));`;
  const contenders = Array.from({ length: 6 }, () => {
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code, "--", "demo-fleet"], { stdio: ["pipe", "pipe", "inherit"] });
    children.push(child);
    return { child, lines: createInterface({ input: child.stdout! })[Symbol.asyncIterator]() };
  });
  for (const { lines } of contenders) assert.equal((await lines.next()).value, "ready");
  for (const { child } of contenders) child.stdin!.write("go\n");
  const outcomes = await Promise.all(contenders.map(async ({ lines }) => JSON.parse(String((await lines.next()).value)) as { won?: number; holder?: number }));
  const winners = outcomes.filter((o) => o.won !== undefined).map((o) => o.won);
  assert.equal(winners.length, 1, JSON.stringify(outcomes));
  assert.ok(
    outcomes.every((o) => o.won !== undefined || o.holder === winners[0]),
    JSON.stringify(outcomes),
  );
  assert.equal(lockHolder(dir), winners[0]);
  for (const { child } of contenders) child.stdin!.end();
  await Promise.all(contenders.map(({ child }) => (child.exitCode === null ? once(child, "exit") : null)));
});

test("a holder's note (its step, since when) reaches the process it refuses; the lock stays the holder's", async () => {
  const dir = stateDir();
  const path = join(dir, "start.lock");
  const holder = await sleeper("start.mjs");
  const taken = acquirePidLock(path, { pid: holder.pid, marker: "start.mjs" });
  assert.ok(taken.ok);
  const header = readFileSync(path, "utf8");
  taken.lock.note("building (npm run build)");
  taken.lock.note("waiting for its console (pid 7) to answer\thttp://127.0.0.1:3000/api/health\n");
  assert.ok(readFileSync(path, "utf8").startsWith(header), "the header is as it was");

  const refused = acquirePidLock(path, { marker: "start.mjs" });
  assert.ok(!refused.ok);
  assert.equal(refused.holder, holder.pid);
  assert.equal(refused.doing, "waiting for its console (pid 7) to answer http://127.0.0.1:3000/api/health");
  const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
  assert.match(String(refused.since), iso);
  assert.match(String(refused.doingSince), iso);
  assert.ok(String(refused.since) <= String(refused.doingSince));
  assert.equal(pidLockHolder(path), holder.pid, "the note leaves the lock its holder's");

  // Released, the note goes with the lock; a note after that writes nothing.
  taken.lock.release();
  taken.lock.note("stopping");
  assert.equal(existsSync(path), false);
});
