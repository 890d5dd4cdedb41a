// The scripted LB scenarios (@meridian/lb-core/testing) on the simulator's LB model: every step logs
// exactly the placements the script expects. packages/proxy/test/scenario.test.ts runs the same
// scripts through the proxy over HTTP and compares its full log with this one.
import assert from "node:assert/strict";
import { test } from "node:test";
import { expectedOf, SCENARIOS } from "@meridian/lb-core/testing";
import { runLbScenario } from "../src/index";

for (const scenario of SCENARIOS) {
  test(`simulator LB model: ${scenario.name}`, () => {
    const run = runLbScenario(scenario);
    assert.deepEqual(
      run.steps.map((entries) => entries.map(expectedOf).sort()),
      scenario.steps.map((step) => [...(step.expect ?? [])].sort()),
    );
    // Every request got an answer; the refused ones as the script says.
    const sent = scenario.steps.flatMap((step) => ("send" in step ? [step.send] : []));
    assert.deepEqual(Object.keys(run.statuses).sort(), [...sent].sort());
  });
}
