import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { DomainError } from "../errors";
import { createHarness, OPERATOR, TEST_TOKEN, waitFor, type Harness } from "../testing/harness";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { listAudit } from "../services/audit";
import { createLb, entrypointMap, failbackLb, failoverLb, listLbs } from "../services/lbs";
import { createRegion, rttMatrix } from "../services/regions";
import { createReplica, listReplicas } from "../services/replicas";
import { provenLbIds } from "./lb-proof-rows";

const REGIONS = ["us-ashburn", "eu-frankfurt", "ap-seoul"] as const;
const RTT: Record<string, Record<string, number>> = {
  "us-ashburn": { "eu-frankfurt": 292, "ap-seoul": 464 },
  "eu-frankfurt": { "ap-seoul": 510 },
};

describe("failover and failback", () => {
  let h: Harness;
  const lbs: Record<string, FakeLb> = {};
  before(async () => {
    h = await createHarness({ failoverAfter: 2, autoFailover: true });
    for (const region of REGIONS) {
      lbs[region] = await startFakeLb({ id: `lb-${region}`, region, token: TEST_TOKEN });
      await createRegion(h.rt, OPERATOR, { name: region });
      await createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: lbs[region]!.url, region, crossRegion: "via-peer" });
      await createReplica(h.rt, OPERATOR, { name: `${region}-a`, url: "http://127.0.0.1:9", region, engine: "sglang", model: "m", homeLbId: `lb-${region}` });
    }
    for (const [from, row] of Object.entries(RTT)) {
      for (const [to, rttMs] of Object.entries(row)) {
        await h.rt.store.db.insert(h.rt.store.tables.observedRtts).values({ fromRegion: from, toRegion: to, rttMs, updatedAt: 0 });
      }
    }
    await h.rt.start();
    await h.rt.health.tick();
    // Only an LB that has proved its token (written in the background after a probe's challenge) is a
    // failover target: the tests below fail LBs over from the start.
    await waitFor(async () => (await provenLbIds(h.rt.store)).size === 3, 10_000, "every LB proven");
  });
  after(async () => {
    await h.close();
    for (const lb of Object.values(lbs)) await lb.close();
  });

  test("observed RTTs come from the LBs' state", async () => {
    await waitFor(() => lbs["us-ashburn"]!.version > 0, 5_000, "configs pushed");
    await h.rt.health.tick();
    const matrix = await rttMatrix(h.rt);
    const us = matrix.regions.indexOf("us-ashburn");
    assert.equal(matrix.rttMs[us]![us], 37);
    assert.equal((await listReplicas(h.rt)).find((r) => r.id === "us-ashburn-a")?.healthy, true);
  });

  test("operator failover re-homes replicas and the entrypoint to the nearest healthy LB", async () => {
    const result = await failoverLb(h.rt, OPERATOR, { id: "lb-us-ashburn" });
    assert.equal(result.targetLbId, "lb-eu-frankfurt", "Frankfurt (292 ms) is nearer than Seoul (464 ms)");
    assert.deepEqual(result.movedReplicas, ["us-ashburn-a"]);
    assert.equal((await entrypointMap(h.rt))["us-ashburn"]?.lbId, "lb-eu-frankfurt");
    const view = (await listLbs(h.rt)).find((lb) => lb.id === "lb-us-ashburn")!;
    assert.equal(view.state, "failed-over");
    assert.equal(view.failedOverTo, "lb-eu-frankfurt");
    assert.deepEqual((await listLbs(h.rt)).find((lb) => lb.id === "lb-eu-frankfurt")!.replicas.sort(), ["eu-frankfurt-a", "us-ashburn-a"]);
    // The target treats the re-homed replica as local: its config now includes it.
    await waitFor(
      () => lbs["eu-frankfurt"]!.configs.at(-1)?.replicas.some((r) => r.id === "us-ashburn-a"),
      5_000,
      "target config includes the re-homed replica",
    );
    const rehomed = lbs["eu-frankfurt"]!.configs.at(-1)!.replicas.find((r) => r.id === "us-ashburn-a")!;
    assert.equal(rehomed.region, "eu-frankfurt", "presented as local to the LB that took it over");
    // Each LB's push is its own: Seoul's may land after Frankfurt's (it did, once, on PostgreSQL).
    await waitFor(() => lbs["ap-seoul"]!.configs.at(-1)?.peers.every((p) => p.id !== "lb-us-ashburn"), 5_000, "the failed LB removed from Seoul's peers");
    await assert.rejects(async () => await failoverLb(h.rt, OPERATOR, { id: "lb-us-ashburn" }), /already failed over/);
  });

  test("failback reverses both", async () => {
    await failbackLb(h.rt, OPERATOR, { id: "lb-us-ashburn" });
    assert.equal((await entrypointMap(h.rt))["us-ashburn"]?.lbId, "lb-us-ashburn");
    assert.equal((await listReplicas(h.rt)).find((r) => r.id === "us-ashburn-a")?.homeLbId, "lb-us-ashburn");
    await waitFor(() => !lbs["eu-frankfurt"]!.configs.at(-1)?.replicas.some((r) => r.id === "us-ashburn-a"), 5_000, "target config without the replica");
    const actions = (await listAudit(h.rt, { action: "lb.fail" })).map((e) => e.action);
    assert.deepEqual(actions, ["lb.failback", "lb.failover"]);
  });

  test("automatic failover after N failed probes; the last healthy LB cannot be failed over", async () => {
    lbs["ap-seoul"]!.healthy = false;
    await h.rt.health.tick();
    assert.equal((await listLbs(h.rt)).find((lb) => lb.id === "lb-ap-seoul")!.state, "healthy", "one failure is not enough");
    await h.rt.health.tick();
    const seoul = (await listLbs(h.rt)).find((lb) => lb.id === "lb-ap-seoul")!;
    assert.equal(seoul.state, "failed-over");
    assert.equal(seoul.failedOverTo, "lb-us-ashburn", "Ashburn (464 ms) is nearer than Frankfurt (510 ms)");
    assert.equal((await listAudit(h.rt, { action: "lb.failover.automatic" }))[0]?.actor, "system:health-monitor");

    await failoverLb(h.rt, OPERATOR, { id: "lb-eu-frankfurt" });
    await assert.rejects(
      async () => await failoverLb(h.rt, OPERATOR, { id: "lb-us-ashburn" }),
      (error: unknown) => error instanceof DomainError && /only healthy load balancer/.test(error.message),
    );
    await assert.rejects(async () => await failbackLb(h.rt, OPERATOR, { id: "lb-ap-seoul" }), /does not answer its health probe/);
    lbs["ap-seoul"]!.healthy = true;
    await h.rt.health.tick();
    await failbackLb(h.rt, OPERATOR, { id: "lb-ap-seoul" });
    assert.equal((await entrypointMap(h.rt))["ap-seoul"]?.lbId, "lb-ap-seoul");
  });
});

describe("failover targets", () => {
  let h: Harness;
  const lbs: Record<string, FakeLb> = {};
  before(async () => {
    h = await createHarness({ healthIntervalMs: 100 });
    // lb-near answers its health probe but holds no token this console issued (something else
    // listening there): though nearest, it must not receive the failed LB's region.
    for (const [region, token] of [
      ["us", TEST_TOKEN],
      ["near", null],
      ["far", TEST_TOKEN],
    ] as const) {
      lbs[region] = await startFakeLb({ id: `lb-${region}`, region, token });
      await createRegion(h.rt, OPERATOR, { name: region });
      await createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: lbs[region]!.url, region });
    }
    await h.rt.store.db.insert(h.rt.store.tables.observedRtts).values({ fromRegion: "us", toRegion: "near", rttMs: 10, updatedAt: 0 });
    await h.rt.store.db.insert(h.rt.store.tables.observedRtts).values({ fromRegion: "us", toRegion: "far", rttMs: 300, updatedAt: 0 });
    await h.rt.start();
  });
  after(async () => {
    await h.close();
    for (const lb of Object.values(lbs)) await lb.close();
  });

  test("an LB that has not proved it holds its token is never a failover target, however near", async () => {
    await waitFor(async () => (await h.rt.store.db.select().from(h.rt.store.tables.lbProofs)).some((p) => p.lbId === "lb-far"), 10_000, "lb-far proven");
    await waitFor(async () => (await listLbs(h.rt)).find((lb) => lb.id === "lb-near")?.credential.error, 10_000, "lb-near's challenge failed");
    const result = await failoverLb(h.rt, OPERATOR, { id: "lb-us" });
    assert.equal(result.targetLbId, "lb-far", "lb-near (10 ms) never proved itself; lb-far (300 ms) did");
    assert.equal((await entrypointMap(h.rt)).us?.lbId, "lb-far");
  });
});

// A health round reads the LB rows, then probes; a dead LB takes the whole probe timeout to answer.
// An operator's failover that commits meanwhile must survive the round's verdict on its stale row.
for (const autoFailover of [false, true]) {
  describe(`a health round during an operator's failover (automatic failover ${autoFailover ? "on" : "off"})`, () => {
    let h: Harness;
    const lbs: Record<string, FakeLb> = {};
    const row = async (id: string) => (await listLbs(h.rt)).find((lb) => lb.id === id)!;
    before(async () => {
      h = await createHarness({ failoverAfter: 2, autoFailover });
      await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
      for (const id of ["lb-a", "lb-b"]) {
        lbs[id] = await startFakeLb({ id, region: "us-ashburn", token: TEST_TOKEN });
        await createLb(h.rt, OPERATOR, { name: id, url: lbs[id]!.url, region: "us-ashburn" });
      }
      await createReplica(h.rt, OPERATOR, { name: "r1", url: "http://127.0.0.1:9", region: "us-ashburn", engine: "sglang", model: "m", homeLbId: "lb-a" });
      await h.rt.health.tick();
      await waitFor(async () => (await provenLbIds(h.rt.store)).size === 2, 10_000, "both LBs proven");
    });
    after(async () => {
      await h?.close();
      for (const lb of Object.values(lbs)) await lb.close();
    });

    test("the failover stands, nothing is marked failed, and the LB can be failed back once it answers", async () => {
      // lb-a stops answering: each of its probes waits until the test lets it time out.
      const client = h.rt.lbClient;
      const probe = client.health.bind(client);
      const unanswered: (() => void)[] = [];
      client.health = (lb) => (lb.id === "lb-a" ? new Promise((resolve) => unanswered.push(() => resolve({ ok: false, error: "timed out" }))) : probe(lb));
      const timeOutProbeOfA = async () => {
        await waitFor(() => unanswered.length > 0, 5_000, "a round probing lb-a");
        unanswered.shift()!();
      };
      try {
        const first = h.rt.health.tick();
        await timeOutProbeOfA();
        await first;
        assert.equal((await row("lb-a")).state, "healthy", "one failure is not enough");

        // The round that reaches failoverAfter has read lb-a as healthy; the operator acts first.
        const round = h.rt.health.tick();
        await waitFor(() => unanswered.length > 0, 5_000, "the round probing lb-a");
        const result = await failoverLb(h.rt, OPERATOR, { id: "lb-a" });
        assert.equal(result.targetLbId, "lb-b");
        await timeOutProbeOfA();
        await round;
        const lbA = await row("lb-a");
        assert.equal(lbA.state, "failed-over", "the round did not write over the failover");
        assert.equal(lbA.failedOverTo, "lb-b");
        assert.deepEqual(
          (await listAudit(h.rt, { target: "lb:lb-a" })).map((e) => e.action).filter((a) => a.startsWith("lb.mark") || a.startsWith("lb.fail")),
          ["lb.failover"],
          "only the operator's failover is audited",
        );
      } finally {
        client.health = probe;
      }

      // lb-a answers again: it stays failed over until failed back, and failback works.
      await h.rt.health.tick();
      assert.equal((await row("lb-a")).state, "failed-over");
      await failbackLb(h.rt, OPERATOR, { id: "lb-a" });
      assert.equal((await row("lb-a")).state, "healthy");
      assert.equal((await entrypointMap(h.rt))["us-ashburn"]?.lbId, "lb-a");
      assert.equal((await listReplicas(h.rt)).find((r) => r.id === "r1")?.rehomed, false);
    });
  });
}

describe("an LB whose automatic failover was refused", () => {
  let h: Harness;
  const lbs: Record<string, FakeLb> = {};
  before(async () => {
    h = await createHarness({ failoverAfter: 2, autoFailover: true });
    for (const region of ["us", "eu"]) {
      lbs[region] = await startFakeLb({ id: `lb-${region}`, region, token: TEST_TOKEN });
      await createRegion(h.rt, OPERATOR, { name: region });
      await createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: lbs[region]!.url, region, crossRegion: "via-peer" });
      await createReplica(h.rt, OPERATOR, { name: `${region}-a`, url: "http://127.0.0.1:9", region, engine: "sglang", model: "m" });
    }
    await h.rt.start();
    // Only the leader acts on probes (marks, failovers): on a loaded machine the election can take
    // longer than the proofs.
    await waitFor(() => h.rt.leadership.view().isLeader, 10_000, "this console leads");
    await h.rt.health.tick();
    await waitFor(async () => (await provenLbIds(h.rt.store)).size === 2, 10_000, "every LB proven");
  });
  after(async () => {
    await h.close();
    for (const lb of Object.values(lbs)) await lb.close();
  });

  test("is failed over once another LB answers again (it stayed 'failed' for good, its replicas unserved)", async () => {
    // Both LBs stop answering at once (a network blip): neither can take the other's replicas.
    lbs.us!.healthy = false;
    lbs.eu!.healthy = false;
    await h.rt.health.tick();
    await h.rt.health.tick();
    const lb = async (id: string) => (await listLbs(h.rt)).find((view) => view.id === id)!;
    assert.equal((await lb("lb-us")).state, "failed");
    assert.equal((await lb("lb-eu")).state, "failed");
    await assert.rejects(
      () => failbackLb(h.rt, OPERATOR, { id: "lb-us" }),
      (error: unknown) =>
        error instanceof DomainError && error.kind === "precondition" && /not failed over; nothing to fail back \(it is failed\)/.test(error.message),
    );
    // lb-eu comes back; lb-us stays dead.
    lbs.eu!.healthy = true;
    await h.rt.health.tick();
    await h.rt.health.tick();
    assert.equal((await lb("lb-eu")).state, "healthy");
    const us = await lb("lb-us");
    assert.equal(us.state, "failed-over");
    assert.equal(us.failedOverTo, "lb-eu");
    assert.deepEqual((await lb("lb-eu")).replicas.sort(), ["eu-a", "us-a"]);
    assert.equal((await listAudit(h.rt, { action: "lb.failover.automatic" }))[0]?.target, "lb:lb-us");
  });
});
