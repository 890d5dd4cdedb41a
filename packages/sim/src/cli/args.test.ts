import assert from "node:assert/strict";
import { test } from "node:test";
import { FlagReader, parseArgv, parseBounds, parseNumberList, parseWeights, readWindow, UsageError } from "./args";

test("parseArgv reads the command, --flag value, --flag=value and boolean flags", () => {
  const raw = parseArgv(["compare", "--trace", "t.jsonl", "--seed=4", "--json"]);
  assert.equal(raw.command, "compare");
  assert.equal(raw.flags.get("trace"), "t.jsonl");
  assert.equal(raw.flags.get("seed"), "4");
  assert.equal(raw.flags.get("json"), true);
  assert.throws(() => parseArgv(["compare", "--trace"]), /--trace needs a value/);
  assert.throws(() => parseArgv(["compare", "--seed", "1", "--seed", "2"]), /given twice/);
  assert.throws(() => parseArgv(["compare", "--json=yes"]), /takes no value/);
});

test("FlagReader validates numbers and reports unknown flags", () => {
  const flags = new FlagReader(parseArgv(["x", "--time-scale", "0", "--seed", "1.5", "--typo", "1"]).flags);
  assert.throws(() => flags.number("time-scale", { exclusiveMin: 0 }), /must be > 0/);
  assert.throws(() => flags.number("seed", { integer: true }), /not an integer/);
  assert.throws(() => flags.rejectUnknown(), /unknown flag --typo/);
  const seeds = new FlagReader(parseArgv(["x", "--seed", "4294967296", "--hop", "4294967295"]).flags);
  assert.throws(() => seeds.number("seed", { integer: true, min: 0, max: 2 ** 32 - 1 }), /--seed: must be ≤ 4294967295, got 4294967296/);
  assert.equal(seeds.number("hop", { integer: true, min: 0, max: 2 ** 32 - 1 }), 2 ** 32 - 1);
});

test("weights, bounds, lists and windows", () => {
  assert.deepEqual(parseWeights("rtt=0.3", { rtt: 0.5, queue: 0.1 }), { rtt: 0.3, queue: 0.1 });
  assert.deepEqual(parseWeights("queue=0.2, rtt=1", { rtt: 0.5, queue: 0.1 }), { rtt: 1, queue: 0.2 });
  for (const bad of ["rtt", "rtt=-1", "rtt=x", "load=1", "rtt=1,rtt=2", ""]) {
    assert.throws(() => parseWeights(bad, { rtt: 0.5, queue: 0.1 }), UsageError, bad);
  }
  assert.deepEqual(parseBounds("queue-bounds", "0.001,0.5"), [0.001, 0.5]);
  assert.throws(() => parseBounds("queue-bounds", "0.5,0.1"), UsageError);
  assert.deepEqual(parseNumberList("time-scales", "1, 2,3", { exclusiveMin: 0 }), [1, 2, 3]);
  assert.throws(() => parseNumberList("time-scales", "1,,3"), UsageError);
  assert.throws(() => parseNumberList("time-scales", "0,1", { exclusiveMin: 0 }), UsageError);
  assert.throws(() => readWindow(new FlagReader(parseArgv(["x", "--from-ms", "10", "--to-ms", "10"]).flags)), /bad window/);
  assert.deepEqual(readWindow(new FlagReader(parseArgv(["x", "--to-ms", "10"]).flags)), { fromMs: undefined, toMs: 10 });
});
