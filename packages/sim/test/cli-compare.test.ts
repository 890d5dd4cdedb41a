// meridian-sim compare as a child process: the --json contract the console reads, stderr progress,
// determinism across processes, --jsonl and the readable table.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runCli, SMALL_WINDOW } from "./cli-helpers";

test("compare --json prints exactly one JSON object with the contract fields, and progress on stderr; without --json a table", async () => {
  const [r, readable] = await Promise.all([
    runCli(["compare", ...SMALL_WINDOW, "--policies", "gorgo,least-request,session-affinity", "--json"]),
    runCli(["compare", ...SMALL_WINDOW, "--policies", "gorgo", "--quiet"]),
  ]);
  assert.equal(readable.code, 0, readable.stderr);
  assert.match(readable.stdout, /session key: first 2 blocks/);
  assert.match(readable.stdout, /^gorgo\s+[\d,]+/m);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split("\n").filter((l) => l.trim() !== "");
  assert.equal(lines.length, 1, `stdout had ${lines.length} lines`);
  const json = JSON.parse(lines[0]!) as { policies: Record<string, unknown>[] };
  assert.deepEqual(
    json.policies.map((p) => p.name),
    ["gorgo", "least-request", "session-affinity"],
  );
  for (const p of json.policies) {
    for (const field of [
      "name",
      "requests",
      "completed",
      "ttft_ms",
      "e2e_ms",
      "itl_ms_p50",
      "throughput_rps",
      "cache_hit_rate",
      "replica_share",
      "max_share",
    ]) {
      assert.ok(field in p, `missing ${field}`);
    }
  }
  assert.match(r.stderr, /^progress \d+\/\d+ \S+$/m);
  const last = r.stderr
    .trim()
    .split("\n")
    .filter((l) => l.startsWith("progress "))
    .pop()!;
  const [done, total] = last.split(" ")[1]!.split("/").map(Number);
  assert.equal(done, total);
});

test("compare is deterministic for a seed across processes; --jsonl writes one row per request and policy", async () => {
  const dir = mkdtempSync(join(tmpdir(), "meridian-sim-"));
  try {
    const path = join(dir, "rows.jsonl");
    const args = ["compare", ...SMALL_WINDOW, "--policies", "gorgo,random", "--seed", "4", "--json", "--quiet"];
    const [a, b] = await Promise.all([runCli(args), runCli([...args, "--jsonl", path])]);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(b.code, 0, b.stderr);
    assert.equal(a.stdout, b.stdout);
    assert.equal(a.stderr, "", "--quiet leaves stderr empty");
    const json = JSON.parse(a.stdout) as { requests: number };
    const rows = readFileSync(path, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { policy: string; ttft_ms: number });
    assert.equal(rows.length, 2 * json.requests);
    assert.ok(rows.every((row) => row.ttft_ms > 0 && (row.policy === "gorgo" || row.policy === "random")));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
