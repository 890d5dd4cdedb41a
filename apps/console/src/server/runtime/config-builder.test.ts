import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { desc, eq } from "drizzle-orm";
import { lbKeyId, peerCredentialHash } from "@meridian/protocol/credentials";
import { createHarness, OPERATOR, TEST_TOKEN, type Harness } from "../testing/harness";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { DEFAULT_LIMITS } from "@meridian/protocol";
import { createLb, setPolicy, updateLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createReplica, updateReplica } from "../services/replicas";
import { buildLbConfig } from "./config-builder";

describe("LB configs", () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
    for (const region of ["us", "eu"]) {
      await createRegion(h.rt, OPERATOR, { name: region });
      await createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: `http://127.0.0.1:1/${region}`, region });
      await createReplica(h.rt, OPERATOR, { name: `${region}-1`, url: "http://127.0.0.1:9", region, engine: "sglang", model: "m", homeLbId: `lb-${region}` });
    }
  });
  after(() => h.close());

  test("an LB that never proved it holds its token is nobody's peer", async () => {
    assert.deepEqual((await buildLbConfig(h.rt.store, "lb-us", 1))!.peers, []);
  });

  test("direct: every replica is a candidate; via-peer: only local ones; peers are the other (proven) LBs", async () => {
    await h.rt.store.db
      .insert(h.rt.store.tables.lbProofs)
      .values({ lbId: "lb-eu", adminBase: "http://127.0.0.1:1/eu", keyId: lbKeyId(TEST_TOKEN), provenAt: 1 });
    const direct = (await buildLbConfig(h.rt.store, "lb-us", 1))!;
    assert.deepEqual(direct.peers[0]?.credentialHashes, [peerCredentialHash(TEST_TOKEN)], "lb-eu's peer credential, hashed");
    assert.deepEqual(
      direct.replicas.map((r) => r.id),
      ["eu-1", "us-1"],
    );
    assert.deepEqual(
      direct.peers.map((p) => p.id),
      ["lb-eu"],
    );
    await setPolicy(h.rt, OPERATOR, { id: "lb-us", policy: "skylb", crossRegion: "via-peer" });
    const viaPeer = (await buildLbConfig(h.rt.store, "lb-us", 2))!;
    assert.deepEqual(
      viaPeer.replicas.map((r) => r.id),
      ["us-1"],
    );
    assert.equal(viaPeer.policy, "skylb");
    await h.rt.store.db.update(h.rt.store.tables.loadBalancers).set({ state: "failed-over" }).where(eq(h.rt.store.tables.loadBalancers.id, "lb-eu"));
    await h.rt.store.db.update(h.rt.store.tables.replicas).set({ rehomedToLbId: "lb-us" }).where(eq(h.rt.store.tables.replicas.id, "eu-1"));
    const takenOver = (await buildLbConfig(h.rt.store, "lb-us", 3))!;
    assert.deepEqual(
      takenOver.replicas.map((r) => [r.id, r.region]),
      [
        ["eu-1", "us"],
        ["us-1", "us"],
      ],
    );
    assert.deepEqual(takenOver.peers, []);
  });

  test("a change that leaves an LB's config as it was records no new version", async () => {
    const versions = async () => (await h.rt.store.db.select().from(h.rt.store.tables.lbConfigs).where(eq(h.rt.store.tables.lbConfigs.lbId, "lb-eu"))).length;
    const before = await versions();
    await h.rt.publisher.publish("lb-eu");
    await h.rt.publisher.publishAll();
    assert.equal(await versions(), before);
    await h.rt.publisher.publish("lb-eu", { force: true });
    assert.equal(await versions(), before + 1);
  });

  test("the LB's limits and a replica's capacity the console stores reach the pushed config; the rest stay defaults", async () => {
    const plain = (await buildLbConfig(h.rt.store, "lb-us", 20))!;
    assert.deepEqual(plain.limits, { ...DEFAULT_LIMITS }, "nothing stored: the protocol's defaults");
    assert.equal(plain.replicas.find((r) => r.id === "us-1")?.maxConcurrency, undefined, "not set: the LB learns it from the engine");
    await updateLb(h.rt, OPERATOR, { id: "lb-us", limits: { maxBodyBytes: 32 * 1024 * 1024, queueMaxWaitMs: 0 } });
    await updateReplica(h.rt, OPERATOR, { id: "us-1", maxConcurrency: 12, cacheCapacityTokens: 0 });
    const config = (await buildLbConfig(h.rt.store, "lb-us", 21))!;
    assert.deepEqual(config.limits, { ...DEFAULT_LIMITS, maxBodyBytes: 32 * 1024 * 1024, queueMaxWaitMs: 0 });
    const us1 = config.replicas.find((r) => r.id === "us-1")!;
    assert.deepEqual([us1.maxConcurrency, us1.cacheCapacityTokens], [12, 0]);
    // And what the publisher records (the config the LB is pushed) carries them too.
    await h.rt.publisher.publish("lb-us");
    const [latest] = await h.rt.store.db
      .select()
      .from(h.rt.store.tables.lbConfigs)
      .where(eq(h.rt.store.tables.lbConfigs.lbId, "lb-us"))
      .orderBy(desc(h.rt.store.tables.lbConfigs.version))
      .limit(1);
    const recorded = JSON.parse(latest!.json) as typeof config;
    assert.equal(recorded.limits.maxBodyBytes, 32 * 1024 * 1024);
    assert.equal(recorded.replicas.find((r) => r.id === "us-1")?.maxConcurrency, 12);
    await updateLb(h.rt, OPERATOR, { id: "lb-us", limits: {} });
    await updateReplica(h.rt, OPERATOR, { id: "us-1", maxConcurrency: null, cacheCapacityTokens: null });
    const reset = (await buildLbConfig(h.rt.store, "lb-us", 22))!;
    assert.deepEqual(reset.limits, { ...DEFAULT_LIMITS }, "{} is every limit at its default");
    assert.equal(reset.replicas.find((r) => r.id === "us-1")?.maxConcurrency, undefined);
  });

  test("an operator can run a region on a peer router's algorithm", async () => {
    let version = 10;
    for (const policy of ["sglang-cache-aware", "llm-d", "dynamo-kv"] as const) {
      await setPolicy(h.rt, OPERATOR, { id: "lb-eu", policy, crossRegion: "direct" });
      assert.equal((await buildLbConfig(h.rt.store, "lb-eu", version++))!.policy, policy);
    }
  });
});

describe("HealthMonitor at startup", () => {
  let h: Harness;
  let up: FakeLb;
  before(async () => {
    h = await createHarness({ failoverAfter: 1 });
    up = await startFakeLb({ id: "lb-up", region: "us", token: TEST_TOKEN });
    await createRegion(h.rt, OPERATOR, { name: "us" });
    await createLb(h.rt, OPERATOR, { name: "lb-up", url: up.url, region: "us" });
    await createLb(h.rt, OPERATOR, { name: "lb-never", url: "http://127.0.0.1:9", region: "us" });
  });
  after(async () => {
    await h.close();
    await up.close();
  });

  test("an LB that never answered is neither failed over nor marked failed during the grace period", async () => {
    await h.rt.start();
    await h.rt.health.tick();
    await h.rt.health.tick();
    const never = (await h.rt.store.db.select().from(h.rt.store.tables.loadBalancers).where(eq(h.rt.store.tables.loadBalancers.id, "lb-never")).limit(1))[0]!;
    assert.equal(never.state, "healthy");
    assert.equal(h.rt.lbHealth.isHealthy("lb-never"), false);
    assert.equal(h.rt.lbHealth.isHealthy("lb-up"), true);
  });
});
