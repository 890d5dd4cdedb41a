// pid files (scripts/lib/pid-files.ts): a killed fleet's leftovers are stopped only while their command line
// still carries the marker; a pid file is replaced whole, so a crash mid-write never leaves half of one.
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, linkSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pidFilePath, readPidFile, stopLeftovers, writePidFile } from "./pid-files";

const dir = mkdtempSync(join(tmpdir(), "meridian-pids-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("a leftover whose command line still carries its marker is stopped; a recycled PID is left alone", {
  skip: !existsSync("/proc/self/cmdline"),
}, async () => {
  // A child that stands in for an engine a killed fleet left behind; its argv carries the marker.
  const leftover = spawn(process.execPath, ["-e", "setInterval(() => {}, 1e6)", "--", "--id", "us-ashburn-a"], { stdio: "ignore" });
  const exited = once(leftover, "exit");
  writePidFile(dir, "us-ashburn-a", leftover.pid!, "--id us-ashburn-a");
  // This test process never carries that marker: as if the PID had been reused by something else.
  writePidFile(dir, "lb-us-ashburn", process.pid, "/nonexistent/lb-us-ashburn.config.json");
  assert.deepEqual(readPidFile(dir, "us-ashburn-a"), { pid: leftover.pid, marker: "--id us-ashburn-a" });

  const stopped = await stopLeftovers(dir, 2_000);
  assert.deepEqual(stopped, [{ name: "us-ashburn-a", pid: leftover.pid }]);
  const [, signal] = (await exited) as [number | null, NodeJS.Signals | null];
  assert.equal(signal, "SIGTERM");
  assert.deepEqual(readdirSync(dir), [], "every pid file is consumed");
});

test("a pid file is replaced whole (a temporary file renamed into place), never rewritten in place", () => {
  const own = mkdtempSync(join(tmpdir(), "meridian-pids-"));
  try {
    writePidFile(own, "lb-eu", 1234, "--config /x/lb-eu.json");
    const path = pidFilePath(own, "lb-eu");
    // A reader that opened the old file (a hard link stands in for it) still reads all of it: the new
    // content went to a new file. Written in place, a crash in between leaves a truncated file.
    linkSync(path, join(own, "reader"));
    const before = statSync(path).ino;
    writePidFile(own, "lb-eu", 5678, "--config /x/lb-eu.json");
    assert.notEqual(statSync(path).ino, before, "the pid file was rewritten in place");
    assert.equal(readFileSync(join(own, "reader"), "utf8"), "1234\n--config /x/lb-eu.json\n");
    assert.deepEqual(readPidFile(own, "lb-eu"), { pid: 5678, marker: "--config /x/lb-eu.json" });
    assert.deepEqual(readdirSync(own).sort(), ["lb-eu.pid", "reader"], "no temporary file left behind");
  } finally {
    rmSync(own, { recursive: true, force: true });
  }
});

test("stopLeftovers removes the temporary pid files of a fleet killed mid-write", async () => {
  const own = mkdtempSync(join(tmpdir(), "meridian-pids-"));
  try {
    writeFileSync(join(own, "lb-eu.pid.4242.tmp"), "56");
    writeFileSync(join(own, "fleet.lock"), "1\ndemo-fleet\n");
    assert.deepEqual(await stopLeftovers(own, 100), []);
    assert.deepEqual(readdirSync(own), ["fleet.lock"], "only the temporary file is removed");
  } finally {
    rmSync(own, { recursive: true, force: true });
  }
});
