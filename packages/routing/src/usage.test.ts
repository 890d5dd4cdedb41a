// An engine's usage counts are taken only when they are whole numbers of tokens a request can hold.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { MAX_USAGE_TOKENS, usageNumber } from "./usage";

test("whole token counts are taken as they are", () => {
  for (const count of [0, 1, 12_031, MAX_USAGE_TOKENS]) assert.equal(usageNumber(count), count);
});

test("a count no engine could mean is no report: fractions, negatives, absurd sizes, non-numbers", () => {
  for (const bad of [16.5, -1, 1e308, MAX_USAGE_TOKENS + 1, Number.NaN, Number.POSITIVE_INFINITY, "12", null, undefined]) {
    assert.equal(usageNumber(bad), null, String(bad));
  }
});
