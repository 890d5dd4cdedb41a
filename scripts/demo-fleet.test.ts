// The demo fleet's settings are checked before it starts anything: a bad --rate exits 2 ("cannot
// start", which npm start does not retry) with one line, and leaves no state behind. Unchecked, "3/s"
// started all nine processes and then crashed the fleet from inside its load generator (exit 1).
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

test("a bad --rate stops the demo fleet before it starts anything", async () => {
  const dir = mkdtempSync(join(tmpdir(), "meridian-demo-rate-"));
  try {
    for (const rate of ["3/s", "0", "-1"]) {
      const child = spawn(process.execPath, ["--import", "tsx", join(root, "scripts", "demo-fleet.ts"), `--rate=${rate}`, "--base-port", "4790"], {
        cwd: root,
        env: { ...process.env, MERIDIAN_DB_PATH: join(dir, "meridian.db") },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
      const [code] = (await once(child, "exit")) as [number | null];
      assert.equal(code, 2, `--rate ${rate}: ${output}`);
      assert.match(output, new RegExp(`--rate: expected requests per second > 0, got "${rate.replace("/", "\\/")}"`));
      assert.equal(existsSync(join(dir, "demo-4790")), false, "no state directory was made");
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
