import { strict as assert } from "node:assert";
import { after, test } from "node:test";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createHarness, type Harness, OPERATOR } from "../testing/harness";

let h: Harness;
after(() => h?.close());

test("a run of 700 steps, the first 100 accepted: the page counts 700 (100), and charts the newest 500", async () => {
  h = await createHarness();
  await createRegion(h.rt, OPERATOR, { name: "us" });
  await createLb(h.rt, OPERATOR, { name: "lb-us", url: "http://127.0.0.1:9", region: "us" }, "lb-us");
  const fresh = await h.rt.tuners.describe("lb-us");
  assert.deepEqual([fresh.stepCount, fresh.acceptedCount, fresh.steps.length], [0, 0, 0], "a new run has no step");

  const { tunerSteps } = h.rt.store.tables;
  const rows = Array.from({ length: 700 }, (_, i) => ({
    runId: fresh.runId,
    step: i + 1,
    weightRtt: 1,
    weightQueue: 1,
    fitnessP95TtftMs: 100,
    sigma: 0.5,
    accepted: i < 100,
    guardrail: null,
    kind: "trial",
    configVersion: null,
    trialJson: null,
    at: 1_000 + i,
  }));
  for (let i = 0; i < rows.length; i += 100) await h.rt.store.db.insert(tunerSteps).values(rows.slice(i, i + 100));

  const view = await h.rt.tuners.describe("lb-us");
  assert.equal(view.stepCount, 700);
  assert.equal(view.acceptedCount, 100);
  assert.equal(view.steps.length, 500, "the list stays bounded");
  assert.deepEqual([view.steps[0]!.step, view.steps.at(-1)!.step], [201, 700], "the newest steps, oldest first");
});
