import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { readPidFile, stopLeftovers, writePidFile } from "./pid-files";

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
