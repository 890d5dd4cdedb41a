// meridian-sim input errors: exit code 2, one clear line on stderr, nothing on stdout. The three
// errors the console is most likely to hit run as child processes; the rest call main() in-process
// (same code path after argv, without paying for tsx startup each time).
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
      [["tune", "--trace", "bundled", "--mode", "paper", "--window", "4", "--hop", "8"], /--hop 8 must not exceed --window 4/],
      [["tune", "--trace", "bundled", "--window", "64"], /--window and --hop apply to --mode paper only/],
      [["grid", "--trace", "bundled", "--rtt-bounds", "0.5,0.5"], /--rtt-bounds: a grid needs lo < hi/],
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

test("a --jsonl path that cannot be opened fails before anything runs (exit 2, one line, no progress); a write that fails later says so the same way", async () => {
  const dir = mkdtempSync(join(tmpdir(), "meridian-sim-"));
  try {
    const file = join(dir, "plain.txt");
    writeFileSync(file, "keep me\n");
    const cases: [string, RegExp][] = [
      [dir, /^meridian-sim: error: --jsonl: .* is a directory, not a file$/],
      [join(file, "rows.jsonl"), /^meridian-sim: error: --jsonl: .*plain\.txt is not a directory$/],
    ];
    for (const [path, message] of cases) {
      // Without --quiet: a run that started would print progress lines before failing.
      const r = await mainError(["compare", "--trace", "bundled", "--policies", "gorgo", "--oracle-gap", "off", "--jsonl", path]);
      assert.equal(r.code, 2, `${path}: exit ${r.code}; stderr: ${r.stderr}`);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.match(r.stderr.trim(), message);
      assert.equal(r.stdout, "");
    }
    assert.equal(readFileSync(file, "utf8"), "keep me\n");
    // A write that fails later (here: a full device) is reported, not thrown as an unhandled error.
    if (existsSync("/dev/full")) {
      const r = await mainError([
        "compare",
        "--trace",
        "bundled",
        "--from-ms",
        "0",
        "--to-ms",
        "20000",
        "--policies",
        "gorgo",
        "--oracle-gap",
        "off",
        "--quiet",
        "--jsonl",
        "/dev/full",
      ]);
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stderr, "meridian-sim: error: --jsonl: writing /dev/full failed: ENOSPC: no space left on device, write\n");
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("--time-scale busy on a window without two arrival times is a usage error naming the flag", async () => {
  const dir = mkdtempSync(join(tmpdir(), "meridian-sim-"));
  try {
    const one = join(dir, "one.jsonl");
    writeFileSync(one, '{"timestamp":0,"input_length":600,"output_length":5,"hash_ids":[0,1]}\n');
    const cases: [string[], RegExp][] = [
      // The fixture's first tick: ten requests, one timestamp.
      [["compare", "--trace", "bundled", "--from-ms", "0", "--to-ms", "1", "--policies", "gorgo"], /all 10 requests arrive at the same time/],
      [["grid", "--trace", "bundled", "--from-ms", "0", "--to-ms", "1", "--points", "2"], /all 10 requests arrive at the same time/],
      [["tune", "--trace", one], /needs at least two requests, got 1/],
    ];
    for (const [args, message] of cases) {
      const r = await mainError([...args, "--time-scale", "busy", "--quiet"]);
      assert.equal(r.code, 2, `${args.join(" ")}: exit ${r.code}; stderr: ${r.stderr}`);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.match(r.stderr, /^meridian-sim: error: --time-scale busy cannot pick a load: /);
      assert.match(r.stderr, message);
      assert.equal(r.stdout, "");
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("--seed takes an integer from 0 to 2^32-1, sweep refuses --time-scale, and tuner flags need gorgo-online", async () => {
  const cases: [string[], RegExp][] = [
    [["compare", "--trace", "bundled", "--seed", "4294967296"], /--seed: must be ≤ 4294967295, got 4294967296/],
    [["compare", "--trace", "bundled", "--seed", "-1"], /--seed: must be ≥ 0, got -1/],
    [["grid", "--trace", "bundled", "--seed", "1.5"], /--seed: "1\.5" is not an integer/],
    [
      ["sweep", "--trace", "bundled", "--time-scales", "1,2", "--time-scale", "busy"],
      /--time-scale does not apply to sweep: it runs every scale of --time-scales/,
    ],
    [["sweep", "--trace", "bundled", "--time-scales", "1", "--time-scale", "2"], /--time-scale does not apply to sweep/],
    [["compare", "--trace", "bundled", "--mode", "paper"], /--mode configures the online tuner, which runs only for gorgo-online/],
    [["compare", "--trace", "bundled", "--policies", "gorgo", "--queue-bounds", "0.05,0.5"], /--queue-bounds configures the online tuner/],
    [["sweep", "--trace", "bundled", "--time-scales", "1", "--window", "16"], /--window configures the online tuner/],
  ];
  for (const [args, message] of cases) {
    const r = await mainError(args);
    assert.equal(r.code, 2, `${args.join(" ")}: exit ${r.code}; stderr: ${r.stderr}`);
    assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    assert.match(r.stderr, message, args.join(" "));
    assert.equal(r.stdout, "", args.join(" "));
  }
});
