import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { eq } from "drizzle-orm";
import { lbConfigs, loadBalancers, replicas } from "@meridian/db";
import { createHarness, OPERATOR, TEST_TOKEN, type Harness } from "../testing/harness";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { createLb, setPolicy } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createReplica } from "../services/replicas";
import { buildLbConfig } from "./config-builder";

describe("LB configs", () => {
  let h: Harness;
  before(() => {
    h = createHarness();
    for (const region of ["us", "eu"]) {
      createRegion(h.rt, OPERATOR, { name: region });
      createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: `http://127.0.0.1:1/${region}`, region });
      createReplica(h.rt, OPERATOR, { name: `${region}-1`, url: "http://127.0.0.1:9", region, engine: "sglang", model: "m", homeLbId: `lb-${region}` });
    }
  });
  after(() => h.close());

  test("direct: every replica is a candidate; via-peer: only local ones; peers are the other LBs", () => {
    const direct = buildLbConfig(h.rt.db, "lb-us", 1)!;
    assert.deepEqual(
      direct.replicas.map((r) => r.id),
      ["eu-1", "us-1"],
    );
    assert.deepEqual(
      direct.peers.map((p) => p.id),
      ["lb-eu"],
    );
    setPolicy(h.rt, OPERATOR, { id: "lb-us", policy: "skylb", crossRegion: "via-peer" });
    const viaPeer = buildLbConfig(h.rt.db, "lb-us", 2)!;
    assert.deepEqual(
      viaPeer.replicas.map((r) => r.id),
      ["us-1"],
    );
    assert.equal(viaPeer.policy, "skylb");
    h.rt.db.update(loadBalancers).set({ state: "failed-over" }).where(eq(loadBalancers.id, "lb-eu")).run();
    h.rt.db.update(replicas).set({ rehomedToLbId: "lb-us" }).where(eq(replicas.id, "eu-1")).run();
    const takenOver = buildLbConfig(h.rt.db, "lb-us", 3)!;
    assert.deepEqual(
      takenOver.replicas.map((r) => [r.id, r.region]),
      [
        ["eu-1", "us"],
        ["us-1", "us"],
      ],
    );
    assert.deepEqual(takenOver.peers, []);
  });

  test("a change that leaves an LB's config as it was records no new version", () => {
    const versions = () => h.rt.db.select().from(lbConfigs).where(eq(lbConfigs.lbId, "lb-eu")).all().length;
    const before = versions();
    h.rt.publisher.publish("lb-eu");
    h.rt.publisher.publishAll();
    assert.equal(versions(), before);
    h.rt.publisher.publish("lb-eu", { force: true });
    assert.equal(versions(), before + 1);
  });
});

describe("HealthMonitor at startup", () => {
  let h: Harness;
  let up: FakeLb;
  before(async () => {
    h = createHarness({ failoverAfter: 1 });
    up = await startFakeLb({ id: "lb-up", region: "us", token: TEST_TOKEN });
    createRegion(h.rt, OPERATOR, { name: "us" });
    createLb(h.rt, OPERATOR, { name: "lb-up", url: up.url, region: "us" });
    createLb(h.rt, OPERATOR, { name: "lb-never", url: "http://127.0.0.1:9", region: "us" });
  });
  after(async () => {
    h.close();
    await up.close();
  });

  test("an LB that never answered is neither failed over nor marked failed during the grace period", async () => {
    h.rt.start();
    await h.rt.health.tick();
    await h.rt.health.tick();
    const never = h.rt.db.select().from(loadBalancers).where(eq(loadBalancers.id, "lb-never")).get()!;
    assert.equal(never.state, "healthy");
    assert.equal(h.rt.lbHealth.isHealthy("lb-never"), false);
    assert.equal(h.rt.lbHealth.isHealthy("lb-up"), true);
  });
});
