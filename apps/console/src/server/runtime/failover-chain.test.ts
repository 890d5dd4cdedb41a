// A failover chain: lb-us fails over to lb-eu, then lb-eu fails over to lb-ap. lb-ap takes what lb-eu
// served, lb-us's replicas and entrypoint included, and becomes lb-us's stand-in: a replica added to
// us is served by lb-ap, never by lb-eu, which is pushed no config while failed over.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { failbackLb, failoverLb, listLbs } from "../services/lbs";
import { createReplica, listReplicas } from "../services/replicas";
import type { FakeLb } from "../testing/fake-lb";
import { createHarness, type Harness, OPERATOR } from "../testing/harness";
import { startThreeRegionFleet } from "../testing/three-region-fleet";

let h: Harness;
const fakes: FakeLb[] = [];
before(async () => {
  h = await createHarness({ autoFailover: false });
  fakes.push(...(await startThreeRegionFleet(h)));
});
after(async () => {
  await h?.close();
  for (const lb of fakes) await lb.close();
});

test("after a failover chain, the last stand-in serves the first LB's replicas, old and new, and failback brings them home", async () => {
  assert.equal((await failoverLb(h.rt, OPERATOR, { id: "lb-us" })).targetLbId, "lb-eu");
  const second = await failoverLb(h.rt, OPERATOR, { id: "lb-eu" });
  assert.equal(second.targetLbId, "lb-ap");
  assert.deepEqual(second.nowStandsInFor, ["lb-us"]);
  assert.equal((await listLbs(h.rt)).find((lb) => lb.id === "lb-us")?.failedOverTo, "lb-ap");

  const { id } = await createReplica(h.rt, OPERATOR, { name: "us-b", url: "http://127.0.0.1:8", region: "us", engine: "sglang", model: "m" });
  const servedBy = async (replicaId: string) => (await listReplicas(h.rt)).find((r) => r.id === replicaId)?.homeLbId;
  assert.equal(await servedBy("us-a"), "lb-ap");
  assert.equal(await servedBy(id), "lb-ap", "served where its region-mate is, not by the failed-over lb-eu");

  await failbackLb(h.rt, OPERATOR, { id: "lb-us" });
  assert.equal(await servedBy("us-a"), "lb-us");
  assert.equal(await servedBy(id), "lb-us");
});
