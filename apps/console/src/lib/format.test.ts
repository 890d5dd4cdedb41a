import { strict as assert } from "node:assert";
import { test } from "node:test";
import { fmtFactor, fmtPct, fmtPctVersus, fmtWeight, fmtWeightTick, weightFieldText } from "./format";

test("fmtWeight: three significant digits, so a small positive weight never reads 0.000", () => {
  assert.equal(fmtWeight(0.8), "0.800");
  assert.equal(fmtWeight(0.2), "0.200");
  assert.equal(fmtWeight(0.0003), "0.000300");
  assert.equal(fmtWeight(0.00012345), "0.000123");
  assert.equal(fmtWeight(1), "1.00");
  assert.equal(fmtWeight(12.345), "12.3");
  assert.equal(fmtWeight(150), "150");
  assert.equal(fmtWeight(2500.4), "2500");
  assert.equal(fmtWeight(0), "0");
  assert.equal(fmtWeight(null), "—");
  assert.equal(fmtWeight(Number.NaN), "—");
});

test("fmtWeightTick: an axis label for weights 0.05 to 100, two significant digits, no trailing zeros", () => {
  assert.equal(fmtWeightTick(0.05), "0.05");
  assert.equal(fmtWeightTick(0.1), "0.1");
  assert.equal(fmtWeightTick(0.25), "0.25");
  assert.equal(fmtWeightTick(0.123), "0.12");
  assert.equal(fmtWeightTick(1), "1.0");
  assert.equal(fmtWeightTick(2.5), "2.5");
  assert.equal(fmtWeightTick(12.3), "12");
  assert.equal(fmtWeightTick(100), "100");
});

test("weightFieldText: the live weight without rounding it to 0 or trailing zeros", () => {
  assert.equal(weightFieldText(0.0003), "0.0003");
  assert.equal(weightFieldText(0.8), "0.8");
  assert.equal(weightFieldText(0.123456789), "0.123457");
  assert.equal(weightFieldText(42), "42");
  assert.notEqual(Number(weightFieldText(0.0000004)), 0);
});

test("fmtPctVersus: a value above its cap never prints equal to it", () => {
  assert.deepEqual(fmtPctVersus(0.0504, 0.05), ["5.04%", "5.00%"]);
  assert.deepEqual(fmtPctVersus(0.06, 0.05), ["6.0%", "5.0%"]);
  assert.deepEqual(fmtPctVersus(0.80001, 0.8), ["80.001%", "80.000%"]);
  assert.deepEqual(fmtPctVersus(0.8, 0.8), ["80.0%", "80.0%"]);
  assert.deepEqual(fmtPctVersus(null, 0.05), ["—", "5.0%"]);
  // The default it widens from is fmtPct's.
  assert.equal(fmtPctVersus(0.123, 0.05)[0], fmtPct(0.123));
});

test("fmtFactor: 1 + g without float noise", () => {
  assert.equal(1 + 0.57, 1.5699999999999998);
  assert.equal(fmtFactor(1 + 0.57), "1.57×");
  assert.equal(fmtFactor(1 + 0.25), "1.25×");
  assert.equal(fmtFactor(1 + 0.125), "1.125×");
  assert.equal(fmtFactor(2), "2×");
  assert.equal(fmtFactor(null), "—");
});
