// Failover and the region's entrypoint: failback gives an LB back the entrypoint its failover took,
// and only that; an LB deleted while failed over hands its region's entrypoint to the region's new LB.
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { createHarness, OPERATOR, TEST_TOKEN, waitFor, type Harness } from "../testing/harness";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { createLb, deleteLb, entrypointMap, failbackLb, failoverLb, listLbs } from "../services/lbs";
import { createRegion } from "../services/regions";
import { provenLbIds } from "./lb-proof-rows";

describe("failover and the region's entrypoint", () => {
  let h: Harness;
  const fakes: Record<string, FakeLb> = {};
  const addLb = async (name: string, region: string) => {
    fakes[name] = await startFakeLb({ id: name, region, token: TEST_TOKEN });
    await createLb(h.rt, OPERATOR, { name, url: fakes[name].url, region });
  };
  before(async () => {
    h = await createHarness();
    for (const region of ["us", "eu"]) await createRegion(h.rt, OPERATOR, { name: region });
    await addLb("lb-a", "us");
    await addLb("lb-b", "us");
    await addLb("lb-eu", "eu");
    await h.rt.start();
    await h.rt.health.tick();
    await waitFor(async () => (await provenLbIds(h.rt.store)).size === 3, 10_000, "every LB proven");
    await waitFor(() => h.rt.leadership.view().isLeader, 10_000, "leadership");
  });
  after(async () => {
    await h.close();
    for (const f of Object.values(fakes)) await f.close();
  });

  test("failing over and back an LB that was not the region's entrypoint leaves the entrypoint where it was", async () => {
    assert.equal((await entrypointMap(h.rt)).us?.assignedLbId, "lb-a");
    const over = await failoverLb(h.rt, OPERATOR, { id: "lb-b" });
    assert.deepEqual(over.movedEntrypoints, []);
    const back = await failbackLb(h.rt, OPERATOR, { id: "lb-b" });
    assert.deepEqual(back.movedEntrypoints, []);
    assert.equal((await entrypointMap(h.rt)).us?.assignedLbId, "lb-a", "lb-a kept the region's clients");
  });

  test("failing back the region's entrypoint takes it back", async () => {
    const over = await failoverLb(h.rt, OPERATOR, { id: "lb-a" });
    assert.deepEqual(over.movedEntrypoints, ["us"]);
    assert.notEqual((await entrypointMap(h.rt)).us?.assignedLbId, "lb-a");
    await failbackLb(h.rt, OPERATOR, { id: "lb-a" });
    assert.equal((await entrypointMap(h.rt)).us?.assignedLbId, "lb-a");
  });

  test("an LB deleted while failed over hands its region's entrypoint to the region's remaining LB", async () => {
    // lb-b goes first so that lb-a's failover must cross to eu.
    await deleteLb(h.rt, OPERATOR, { id: "lb-b" });
    await failoverLb(h.rt, OPERATOR, { id: "lb-a" });
    assert.equal((await entrypointMap(h.rt)).us?.assignedLbId, "lb-eu");
    await addLb("lb-us2", "us");
    await deleteLb(h.rt, OPERATOR, { id: "lb-a" });
    assert.deepEqual(
      (await listLbs(h.rt)).map((l) => l.id),
      ["lb-eu", "lb-us2"],
    );
    assert.equal((await entrypointMap(h.rt)).us?.assignedLbId, "lb-us2", "us's clients came home to lb-us2");
  });
});
