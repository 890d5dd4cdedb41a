import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PredictionWindow } from "./prediction-window";

describe("PredictionWindow", () => {
  it("is Σmin/Σmax over the reports of the last window", () => {
    const w = new PredictionWindow(60_000);
    assert.equal(w.stats(0).accuracy, null);
    w.add(1_000, 100, 100);
    w.add(2_000, 100, 50);
    w.add(3_000, 0, 100);
    w.add(4_000, 300, null);
    const s = w.stats(5_000);
    assert.equal(s.accuracy, 150 / 300);
    assert.deepEqual([s.reports, s.unreported, s.predictedTokens, s.actualTokens], [3, 1, 200, 250]);
    assert.equal(w.stats(62_500).accuracy, 0, "only the 0-vs-100 report is still in the window");
    assert.equal(w.stats(70_000).accuracy, null);
  });

  it("counts 0-of-0 reports as exact and keeps only the newest `capacity` entries", () => {
    const w = new PredictionWindow(60_000, 4);
    w.add(0, 0, 0);
    assert.equal(w.stats(1).accuracy, 1);
    for (let i = 1; i <= 4; i++) w.add(i, 100, 0);
    const s = w.stats(10);
    assert.equal(s.reports, 4);
    assert.equal(s.accuracy, 0);
    w.clear();
    assert.equal(w.stats(10).reports, 0);
  });
});
