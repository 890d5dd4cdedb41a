// meridian-sim compare as a child process: the --json contract the console reads, stderr progress,
// determinism across processes, --jsonl and the readable table.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runCli, SMALL_WINDOW } from "./cli-helpers";
import { assertCompareContractFields } from "./compare-contract";

test("compare --json prints exactly one JSON object with the contract fields, and progress on stderr; without --json a table", async () => {
  const [r, readable] = await Promise.all([
    runCli(["compare", ...SMALL_WINDOW, "--policies", "gorgo,least-request,session-affinity", "--json"]),
    runCli(["compare", ...SMALL_WINDOW, "--policies", "gorgo", "--quiet"]),
  ]);
  assert.equal(readable.code, 0, readable.stderr);
  assert.match(readable.stdout, /session key: the conversation: the first block after the deepest prefix/);
  assert.match(readable.stdout, /^gorgo\s+[\d,]+/m);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split("\n").filter((l) => l.trim() !== "");
  assert.equal(lines.length, 1, `stdout had ${lines.length} lines`);
  const json = JSON.parse(lines[0]!) as { policies: Record<string, unknown>[] };
  assert.deepEqual(
    json.policies.map((p) => p.name),
    ["gorgo", "least-request", "session-affinity"],
  );
  for (const p of json.policies) assertCompareContractFields(p);
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

test("--jsonl writes a row for every request, the refused ones too: their status, error code and null latencies", async () => {
  const dir = mkdtempSync(join(tmpdir(), "meridian-sim-"));
  try {
    // 600 long prompts 100 ms apart, unrelated to each other: more than the paper fleet clears, so
    // its LB holds requests and refuses some (queue full, wait bound passed).
    const trace = join(dir, "burst.jsonl");
    const hashIds = (i: number) => [0, 10_000 + i, ...Array.from({ length: 57 }, (_, k) => 20_000 + i * 60 + k)];
    writeFileSync(
      trace,
      Array.from({ length: 600 }, (_, i) => JSON.stringify({ timestamp: i * 100, input_length: 30_000, output_length: 50, hash_ids: hashIds(i) })).join("\n"),
    );
    const path = join(dir, "rows.jsonl");
    const r = await runCli(["compare", "--trace", trace, "--policies", "random", "--oracle-gap", "off", "--json", "--quiet", "--jsonl", path]);
    assert.equal(r.code, 0, r.stderr);
    const json = JSON.parse(r.stdout) as { requests: number; policies: { completed: number; failed: number; failed_by_code: Record<string, number> }[] };
    const policy = json.policies[0]!;
    assert.ok(policy.failed > 0, "the burst makes the LB refuse requests");
    type Row = {
      policy: string;
      id: number;
      trace_index: number;
      lb: string;
      status: number;
      error: string | null;
      ttft_ms: number | null;
      e2e_ms: number | null;
      replica: string | null;
    };
    const rows = readFileSync(path, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Row);
    assert.equal(rows.length, json.requests, "one row per request");
    assert.deepEqual(
      rows.map((row) => row.trace_index).sort((a, b) => a - b),
      Array.from({ length: 600 }, (_, i) => i),
      "every trace row once",
    );
    const refused = rows.filter((row) => row.error !== null);
    assert.equal(refused.length, policy.failed);
    const byCode: Record<string, number> = {};
    for (const row of refused) {
      byCode[row.error!] = (byCode[row.error!] ?? 0) + 1;
      assert.equal(row.status, 503);
      assert.equal(row.ttft_ms, null);
      assert.equal(row.e2e_ms, null);
      assert.equal(row.replica, null);
      assert.equal(row.lb, "lb-us-ashburn");
    }
    assert.deepEqual(byCode, policy.failed_by_code);
    const served = rows.filter((row) => row.error === null);
    assert.equal(served.length, policy.completed);
    assert.ok(served.every((row) => row.status === 200 && row.ttft_ms! > 0 && row.replica !== null && row.policy === "random"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
