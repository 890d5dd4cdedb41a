import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { flag, parseNumberFlag, SEED_RULE } from "./flags";

test("numeric bench flags take only values that keep their rule, and say what they expected", () => {
  assert.equal(parseNumberFlag("seed", "7", SEED_RULE), 7);
  assert.equal(parseNumberFlag("seed", "4294967295", SEED_RULE), 2 ** 32 - 1);
  assert.equal(parseNumberFlag("time-scale", "0.5", { exclusiveMin: 0 }), 0.5);
  const cases: [string, string | undefined, Parameters<typeof parseNumberFlag>[2], RegExp][] = [
    ["seed", "abc", SEED_RULE, /--seed: expected an integer from 0 to 4294967295, got "abc"$/],
    ["seed", "", SEED_RULE, /got ""/],
    ["seed", "4294967296", SEED_RULE, /from 0 to 4294967295/],
    ["seed", "-1", SEED_RULE, /from 0 to 4294967295/],
    ["seed", "2.5", SEED_RULE, /an integer/],
    ["seed", undefined, SEED_RULE, /got no value$/],
    ["seed", "--json", SEED_RULE, /got "--json"/],
    ["seeds", "0", { integer: true, min: 1 }, /--seeds: expected an integer ≥ 1, got "0"$/],
    ["time-scale", "0", { exclusiveMin: 0 }, /--time-scale: expected a number > 0, got "0"$/],
    ["time-scale", "Infinity", { exclusiveMin: 0 }, /a number > 0/],
  ];
  for (const [name, raw, rule, message] of cases) assert.throws(() => parseNumberFlag(name, raw, rule), message, `--${name} ${raw}`);
  assert.equal(flag("seed", ["node", "x.ts", "--seed", "3"]), "3");
  assert.equal(flag("seed", ["node", "x.ts"]), undefined);
  assert.equal(flag("time-scale", ["node", "x.ts", "--time-scale=2"]), "2", "--name=value is read, not ignored");
  assert.equal(flag("trace", ["node", "x.ts", "--trace=/a=b.jsonl"]), "/a=b.jsonl");
  assert.equal(flag("seed", ["node", "x.ts", "--seeds=4"]), undefined, "a longer flag is another flag");
});

test("a bench script given a bad number exits 2 with one line before it runs anything", async () => {
  const sim = fileURLToPath(new URL("./sim.ts", import.meta.url));
  const run = (args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, ["--import", "tsx", sim, ...args], { encoding: "utf8", timeout: 60_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr }),
      );
    });
  const [seed, scale] = await Promise.all([run(["--table", "--seed", "abc"]), run(["--time-scale", "fast"])]);
  assert.equal(seed.code, 2, seed.stderr);
  assert.equal(seed.stderr, 'sim.ts: error: --seed: expected an integer from 0 to 4294967295, got "abc"\n');
  assert.equal(seed.stdout, "");
  assert.equal(scale.code, 2, scale.stderr);
  assert.equal(scale.stderr, 'sim.ts: error: --time-scale: expected a number > 0, got "fast"\n');
  assert.equal(scale.stdout, "");
});
