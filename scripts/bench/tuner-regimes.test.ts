import assert from "node:assert/strict";
import { test } from "node:test";
import { bundledTracePath, loadTrace } from "@meridian/workload";
import { budgetReached, everyTunerFrozen, regime, reportSummary, requestsOf, tuneOn } from "./tuner-regimes";

test("a samples budget longer than the trace freezes no tuner, and the summary says so per tuner", async () => {
  // The bundled fixture (500 rows): no per-LB tuner sees 1,000 samples, so "frozen after 1,000" never happens.
  const r = regime("short");
  const requests = requestsOf(r, await loadTrace(bundledTracePath()), 0.5);
  const whole = tuneOn(r.spec, requests, 1, { scope: "lb" });
  const long = tuneOn(r.spec, requests, 1, { scope: "lb", stopAfter: { samples: 1_000 } });
  const short = tuneOn(r.spec, requests, 1, { scope: "lb", stopAfter: { samples: 50 } });
  const never = budgetReached(long.reports);
  assert.deepEqual(Object.keys(never).sort(), ["lb-ap-seoul", "lb-eu-frankfurt", "lb-us-ashburn"]);
  assert.ok(
    Object.values(never).every((x) => x === false),
    JSON.stringify(never),
  );
  assert.equal(everyTunerFrozen(never), false);
  const reached = budgetReached(short.reports);
  assert.ok(
    Object.values(reached).every((x) => x === true),
    JSON.stringify(reached),
  );
  assert.equal(everyTunerFrozen(reached), true);
  for (const t of reportSummary(long.reports, never)) {
    assert.equal(t.budget_reached, false);
    assert.ok(t.samples_seen > 0 && t.samples_seen <= 1_000, `${t.tuner} saw ${t.samples_seen}`);
  }
  assert.ok(reportSummary(short.reports, reached).every((t) => t.budget_reached === true && t.samples_seen === 51));
  assert.ok(
    reportSummary(whole.reports).every((t) => !("budget_reached" in t)),
    "a run without a budget carries no budget field",
  );
});
