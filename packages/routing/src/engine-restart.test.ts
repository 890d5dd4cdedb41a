import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { engineRestarted, ZeroCachedRun } from "./engine-restart";

describe("engineRestarted", () => {
  const epoch = (startTimeSec: number | null, prompt: number, generation = 0) => ({
    startTimeSec,
    counters: { prompt_tokens_total: prompt, generation_tokens_total: generation },
  });

  it("sees a new process in a moved start time or a counter going back", () => {
    assert.equal(engineRestarted(null, epoch(1000, 5)), false, "the first scrape is a baseline");
    assert.equal(engineRestarted(epoch(1000, 5), epoch(1000.4, 9)), false, "same process, rounding");
    assert.equal(engineRestarted(epoch(1000, 5), epoch(2000, 9)), true, "restarted: start time moved");
    assert.equal(engineRestarted(epoch(null, 500, 70), epoch(null, 20, 80)), true, "prompt tokens went back");
    assert.equal(engineRestarted(epoch(null, 500, 70), epoch(null, 600, 3)), true, "generation tokens went back");
    assert.equal(engineRestarted(epoch(null, 500), epoch(null, 500)), false);
  });

  it("ignores counters one side lacks and values that are not numbers", () => {
    assert.equal(engineRestarted({ startTimeSec: null, counters: { a: 10 } }, { startTimeSec: null, counters: { b: 1 } }), false);
    assert.equal(engineRestarted({ startTimeSec: Number.NaN, counters: { a: 10 } }, { startTimeSec: 5, counters: { a: Number.NaN } }), false);
  });
});

describe("ZeroCachedRun", () => {
  it("fires on the third zero report in a row on predicted hits, then starts over", () => {
    const run = new ZeroCachedRun(3);
    assert.equal(run.observe("r", 1000, 0), false);
    assert.equal(run.observe("r", 0, 0), false, "no prediction: neither extends nor breaks the run");
    assert.equal(run.observe("r", 1000, null), false, "unreported: neither extends nor breaks the run");
    assert.equal(run.observe("other", 1000, 0), false, "runs are per replica");
    assert.equal(run.observe("r", 1000, 0), false);
    assert.equal(run.observe("r", 1000, 0), true);
    assert.equal(run.observe("r", 1000, 0), false, "starts over after firing");
  });

  it("any cached tokens break the run", () => {
    const run = new ZeroCachedRun(2);
    run.observe("r", 1000, 0);
    run.observe("r", 1000, 16);
    assert.equal(run.observe("r", 1000, 0), false);
    assert.equal(run.observe("r", 1000, 0), true);
  });
});
