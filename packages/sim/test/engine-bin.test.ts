// The meridian-engine bin as a process: prints its URL when ready, serves, and exits 0 on SIGTERM.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const bin = join(fileURLToPath(import.meta.url), "..", "..", "bin", "meridian-engine.mjs");

describe("meridian-engine bin", () => {
  it("starts, prints its URL, serves /health and stops cleanly on SIGTERM", async () => {
    const child = spawn(process.execPath, [bin, "--port", "0", "--id", "t-1", "--region", "us-ashburn", "--log-level", "silent"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      let stdout = "";
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on("data", (chunk: Buffer) => {
          stdout += chunk.toString();
          const match = /listening on (http:\/\/\S+)/.exec(stdout);
          if (match) resolve(match[1]!);
        });
        child.once("exit", (code) => reject(new Error(`exited early with ${code}: ${stdout}`)));
      });
      const health = await fetch(`${url}/health`);
      assert.equal(health.status, 200);
      await health.text();
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      const [code] = (await exited) as [number | null];
      assert.equal(code, 0);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  });

  it("exits 2 with a usage message on a bad flag", async () => {
    const child = spawn(process.execPath, [bin, "--dialect", "nope"], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, "exit")) as [number | null];
    assert.equal(code, 2);
    assert.match(stderr, /--dialect/);
    assert.match(stderr, /usage: meridian-engine/);
  });
});
