// A replica created while its region had no LB has no home. Moved to a region that has an LB, without
// naming a home, it takes that region's default home, as a replica created there does; before, it stayed
// unhomed (no via-peer LB listed it, and failover did not move it).
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { createHarness, OPERATOR, type Harness } from "../testing/harness";
import { createLb } from "./lbs";
import { createRegion } from "./regions";
import { createReplica, listReplicas, updateReplica } from "./replicas";

describe("moving an unhomed replica", () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
    await createRegion(h.rt, OPERATOR, { name: "us" });
    await createRegion(h.rt, OPERATOR, { name: "ap" });
    await createLb(h.rt, OPERATOR, { name: "lb-us", url: "http://127.0.0.1:1", region: "us", crossRegion: "via-peer" });
  });
  after(async () => {
    await h.close();
  });

  test("gets its new region's default home, as a replica created there would", async () => {
    const { id } = await createReplica(h.rt, OPERATOR, { name: "r1", url: "http://127.0.0.1:2", region: "ap", engine: "sglang", model: "m" });
    assert.equal((await listReplicas(h.rt)).find((r) => r.id === id)?.homeLbId, null, "ap has no LB yet");
    await updateReplica(h.rt, OPERATOR, { id, region: "us" });
    const created = await createReplica(h.rt, OPERATOR, { name: "r2", url: "http://127.0.0.1:3", region: "us", engine: "sglang", model: "m" });
    const views = await listReplicas(h.rt);
    assert.equal(views.find((r) => r.id === created.id)?.homeLbId, "lb-us", "a replica created in us is homed on lb-us");
    assert.equal(views.find((r) => r.id === id)?.homeLbId, "lb-us", "the replica moved to us is not homed");
  });
});
