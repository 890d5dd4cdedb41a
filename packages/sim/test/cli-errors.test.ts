// meridian-sim input errors: exit code 2, one clear line on stderr, nothing on stdout. The three
// errors the console is most likely to hit run as child processes; the rest call main() in-process
// (same code path after argv, without paying for tsx startup each time).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { main } from "../src/cli/main";
import { runCli } from "./cli-helpers";

test("missing file, bad window and unknown policy exit 2 with a clear message (child processes)", async () => {
  const cases: [string[], RegExp][] = [
    [["compare", "--trace", "/nonexistent/trace.jsonl", "--json"], /meridian-sim: error: trace file not found: \/nonexistent\/trace\.jsonl/],
    [["compare", "--trace", "bundled", "--from-ms", "5000", "--to-ms", "1000", "--json"], /meridian-sim: error: bad window/],
    [["compare", "--trace", "bundled", "--policies", "gorgo,fastest", "--json"], /meridian-sim: error: unknown policy "fastest"/],
  ];
  const results = await Promise.all(cases.map(([args]) => runCli(args)));
  results.forEach((r, i) => {
    assert.equal(r.code, 2, `${cases[i]![0].join(" ")}: exit ${r.code}; stderr: ${r.stderr}`);
    assert.match(r.stderr, cases[i]![1]);
    assert.equal(r.stdout, "");
  });
});

async function mainError(args: string[]): Promise<{ code: number; stderr: string; stdout: string }> {
  const stderr: string[] = [];
  const stdout: string[] = [];
  // Only stderr and console.log are captured: the test runner itself reports on process.stdout, and
  // the CLI writes its output either through console.log (tables) or after validation (JSON).
  const errWrite = process.stderr.write;
  const log = console.log;
  process.stderr.write = ((chunk: string) => {
    stderr.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  console.log = (...parts: unknown[]) => void stdout.push(parts.join(" "));
  try {
    const code = await main(args);
    return { code, stderr: stderr.join(""), stdout: stdout.join("") };
  } finally {
    process.stderr.write = errWrite;
    console.log = log;
  }
}

test("other usage errors exit 2 with a message naming the problem", async () => {
  const dir = mkdtempSync(join(tmpdir(), "meridian-sim-"));
  try {
    const bad = join(dir, "bad.jsonl");
    writeFileSync(bad, '{"timestamp":0,"input_length":10,"output_length":5,"hash_ids":[0]}\n{"timestamp":"x"}\n');
    const cases: [string[], RegExp][] = [
      [["compare", "--trace", "bundled", "--from-ms", "-1"], /--from-ms: must be ≥ 0/],
      [["compare", "--trace", "bundled", "--from-ms", "1000000000"], /no requests in the window/],
      [["compare", "--trace", "bundled", "--weights", "rtt=abc"], /--weights/],
      [["compare", "--trace", "bundled", "--weights", "speed=1"], /unknown weight "speed"/],
      [["compare", "--trace", "bundled", "--polices", "gorgo"], /unknown flag --polices/],
      [["compare", "--trace", "bundled", "--preset", "moon"], /unknown preset "moon"/],
      [["compare"], /--trace FILE is required/],
      [["tune", "--trace", "bundled", "--mode", "fast"], /--mode: expected ab or paper/],
      [["tune", "--trace", "bundled", "--guardrails", "maybe"], /--guardrails: expected on or off/],
      [["tune", "--trace", "bundled", "--queue-bounds", "0,0.5"], /lower bound must be > 0/],
      [["sweep", "--trace", "bundled"], /--time-scales/],
      [["launch"], /unknown command "launch"/],
      [["compare", "--trace", "bundled", "--jsonl", "/nonexistent/dir/rows.jsonl"], /--jsonl: directory \/nonexistent\/dir does not exist/],
      [["compare", "--trace", bad], /bad\.jsonl:2/],
    ];
    for (const [args, message] of cases) {
      const r = await mainError(args);
      assert.equal(r.code, 2, `${args.join(" ")}: exit ${r.code}; stderr: ${r.stderr}`);
      assert.match(r.stderr, message, args.join(" "));
      assert.equal(r.stdout, "", args.join(" "));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
