import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { observedRtts } from "@meridian/db";
import { DomainError } from "../errors";
import { createHarness, OPERATOR, TEST_TOKEN, waitFor, type Harness } from "../testing/harness";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { listAudit } from "../services/audit";
import { createLb, entrypointMap, failbackLb, failoverLb, listLbs } from "../services/lbs";
import { createRegion, rttMatrix } from "../services/regions";
import { createReplica, listReplicas } from "../services/replicas";

const REGIONS = ["us-ashburn", "eu-frankfurt", "ap-seoul"] as const;
const RTT: Record<string, Record<string, number>> = {
  "us-ashburn": { "eu-frankfurt": 292, "ap-seoul": 464 },
  "eu-frankfurt": { "ap-seoul": 510 },
};

describe("failover and failback", () => {
  let h: Harness;
  const lbs: Record<string, FakeLb> = {};
  before(async () => {
    h = createHarness({ failoverAfter: 2, autoFailover: true });
    for (const region of REGIONS) {
      lbs[region] = await startFakeLb({ id: `lb-${region}`, region, token: TEST_TOKEN });
      createRegion(h.rt, OPERATOR, { name: region });
      createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: lbs[region]!.url, region, crossRegion: "via-peer" });
      createReplica(h.rt, OPERATOR, { name: `${region}-a`, url: "http://127.0.0.1:9", region, engine: "sglang", model: "m", homeLbId: `lb-${region}` });
    }
    for (const [from, row] of Object.entries(RTT)) {
      for (const [to, rttMs] of Object.entries(row)) {
        h.rt.db.insert(observedRtts).values({ fromRegion: from, toRegion: to, rttMs, updatedAt: 0 }).run();
      }
    }
    h.rt.start();
    await h.rt.health.tick();
  });
  after(async () => {
    h.close();
    for (const lb of Object.values(lbs)) await lb.close();
  });

  test("observed RTTs come from the LBs' state", async () => {
    await waitFor(() => lbs["us-ashburn"]!.version > 0, 5_000, "configs pushed");
    await h.rt.health.tick();
    const matrix = rttMatrix(h.rt);
    const us = matrix.regions.indexOf("us-ashburn");
    assert.equal(matrix.rttMs[us]![us], 37);
    assert.equal(listReplicas(h.rt).find((r) => r.id === "us-ashburn-a")?.healthy, true);
  });

  test("operator failover re-homes replicas and the entrypoint to the nearest healthy LB", async () => {
    const result = failoverLb(h.rt, OPERATOR, { id: "lb-us-ashburn" });
    assert.equal(result.targetLbId, "lb-eu-frankfurt", "Frankfurt (292 ms) is nearer than Seoul (464 ms)");
    assert.deepEqual(result.movedReplicas, ["us-ashburn-a"]);
    assert.equal(entrypointMap(h.rt)["us-ashburn"]?.lbId, "lb-eu-frankfurt");
    const view = listLbs(h.rt).find((lb) => lb.id === "lb-us-ashburn")!;
    assert.equal(view.state, "failed-over");
    assert.equal(view.failedOverTo, "lb-eu-frankfurt");
    assert.deepEqual(
      listLbs(h.rt)
        .find((lb) => lb.id === "lb-eu-frankfurt")!
        .replicas.sort(),
      ["eu-frankfurt-a", "us-ashburn-a"],
    );
    // The target treats the re-homed replica as local: its config now includes it.
    await waitFor(
      () => lbs["eu-frankfurt"]!.configs.at(-1)?.replicas.some((r) => r.id === "us-ashburn-a"),
      5_000,
      "target config includes the re-homed replica",
    );
    const rehomed = lbs["eu-frankfurt"]!.configs.at(-1)!.replicas.find((r) => r.id === "us-ashburn-a")!;
    assert.equal(rehomed.region, "eu-frankfurt", "presented as local to the LB that took it over");
    assert.ok(!lbs["ap-seoul"]!.configs.at(-1)?.peers.some((p) => p.id === "lb-us-ashburn"), "failed LB removed from peers");
    assert.throws(() => failoverLb(h.rt, OPERATOR, { id: "lb-us-ashburn" }), /already failed over/);
  });

  test("failback reverses both", async () => {
    failbackLb(h.rt, OPERATOR, { id: "lb-us-ashburn" });
    assert.equal(entrypointMap(h.rt)["us-ashburn"]?.lbId, "lb-us-ashburn");
    assert.equal(listReplicas(h.rt).find((r) => r.id === "us-ashburn-a")?.homeLbId, "lb-us-ashburn");
    await waitFor(() => !lbs["eu-frankfurt"]!.configs.at(-1)?.replicas.some((r) => r.id === "us-ashburn-a"), 5_000, "target config without the replica");
    const actions = listAudit(h.rt, { action: "lb.fail" }).map((e) => e.action);
    assert.deepEqual(actions, ["lb.failback", "lb.failover"]);
  });

  test("automatic failover after N failed probes; the last healthy LB cannot be failed over", async () => {
    lbs["ap-seoul"]!.healthy = false;
    await h.rt.health.tick();
    assert.equal(listLbs(h.rt).find((lb) => lb.id === "lb-ap-seoul")!.state, "healthy", "one failure is not enough");
    await h.rt.health.tick();
    const seoul = listLbs(h.rt).find((lb) => lb.id === "lb-ap-seoul")!;
    assert.equal(seoul.state, "failed-over");
    assert.equal(seoul.failedOverTo, "lb-us-ashburn", "Ashburn (464 ms) is nearer than Frankfurt (510 ms)");
    assert.equal(listAudit(h.rt, { action: "lb.failover.automatic" })[0]?.actor, "system:health-monitor");

    failoverLb(h.rt, OPERATOR, { id: "lb-eu-frankfurt" });
    assert.throws(
      () => failoverLb(h.rt, OPERATOR, { id: "lb-us-ashburn" }),
      (error: unknown) => error instanceof DomainError && /only healthy load balancer/.test(error.message),
    );
    assert.throws(() => failbackLb(h.rt, OPERATOR, { id: "lb-ap-seoul" }), /does not answer its health probe/);
    lbs["ap-seoul"]!.healthy = true;
    await h.rt.health.tick();
    failbackLb(h.rt, OPERATOR, { id: "lb-ap-seoul" });
    assert.equal(entrypointMap(h.rt)["ap-seoul"]?.lbId, "lb-ap-seoul");
  });
});
