import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { chooseTrace } from "./trace-path";

test("a --trace path is used only when it exists; the default path alone falls back to the fixture, with a note", () => {
  const exists = (path: string) => path === "/here.jsonl" || path === "/fixture.jsonl";
  assert.deepEqual(chooseTrace("/here.jsonl", true, "/default.jsonl", "/fixture.jsonl", exists), { path: "/here.jsonl" });
  assert.deepEqual(chooseTrace("/typo.jsonl", true, "/default.jsonl", "/fixture.jsonl", exists), { error: "--trace: /typo.jsonl not found" });
  assert.deepEqual(chooseTrace(undefined, true, "/default.jsonl", "/fixture.jsonl", exists), { error: "--trace: expected a path, got no value" });
  assert.deepEqual(chooseTrace("--table", true, "/default.jsonl", "/fixture.jsonl", exists), { error: "--trace: expected a path, got no value" });
  assert.deepEqual(chooseTrace(undefined, false, "/default.jsonl", "/fixture.jsonl", exists), {
    path: "/fixture.jsonl",
    note: "trace /default.jsonl not found; using the bundled fixture",
  });
  assert.deepEqual(chooseTrace(undefined, false, "/here.jsonl", "/fixture.jsonl", exists), { path: "/here.jsonl" });
});

test("bench:sim and bench:sim --table given a --trace that does not exist exit 1 with one line, not a JSON for the fixture", async () => {
  const sim = fileURLToPath(new URL("./sim.ts", import.meta.url));
  const missing = "/nonexistent/held-out.jsonl";
  const run = (args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, ["--import", "tsx", sim, ...args], { encoding: "utf8", timeout: 60_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr }),
      );
    });
  const [plain, table] = await Promise.all([run(["--trace", missing, "--policies", "gorgo", "--no-index-truth"]), run(["--table", `--trace=${missing}`])]);
  assert.equal(plain.code, 1, plain.stdout);
  assert.equal(plain.stderr, `sim.ts: error: --trace: ${missing} not found\n`);
  assert.equal(plain.stdout, "");
  assert.equal(table.code, 1, table.stdout.slice(0, 300));
  assert.equal(table.stderr, `sim.ts: error: --trace: ${missing} not found\n`);
  assert.equal(table.stdout, "");
});
