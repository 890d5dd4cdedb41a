import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { eq } from "drizzle-orm";
import { loadBalancers, observedRtts } from "@meridian/db";
import { createHarness, OPERATOR, TEST_TOKEN, waitFor, type Harness } from "../testing/harness";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { listAudit } from "../services/audit";
import { createLb, entrypointMap, failoverLb, listLbs } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createReplica, listReplicas } from "../services/replicas";
import { failbackDue } from "./auto-failback";

const PERIOD = 30_000;

describe("failbackDue", () => {
  const auto = { state: "failed-over" as const, failedOverAutomatically: true };
  test("due once an automatically failed-over LB has been healthy for the whole period", () => {
    assert.equal(failbackDue({ lb: auto, healthySince: 1_000, now: 1_000 + PERIOD - 1, healthyForMs: PERIOD }), false);
    assert.equal(failbackDue({ lb: auto, healthySince: 1_000, now: 1_000 + PERIOD, healthyForMs: PERIOD }), true);
  });
  test("never for an operator's failover, an LB not failed over, one not answering, or with the feature off", () => {
    const long = { healthySince: 0, now: 10 * PERIOD, healthyForMs: PERIOD };
    assert.equal(failbackDue({ ...long, lb: { state: "failed-over", failedOverAutomatically: false } }), false);
    assert.equal(failbackDue({ ...long, lb: { state: "healthy", failedOverAutomatically: false } }), false);
    assert.equal(failbackDue({ ...long, lb: { state: "failed", failedOverAutomatically: false } }), false);
    assert.equal(failbackDue({ ...long, lb: auto, healthySince: null }), false);
    assert.equal(failbackDue({ ...long, lb: auto, healthyForMs: 0 }), false);
  });
});

describe("automatic failback", () => {
  let h: Harness;
  const lbs: Record<string, FakeLb> = {};
  const REGIONS = ["us-ashburn", "eu-frankfurt"] as const;
  const row = (id: string) => h.rt.db.select().from(loadBalancers).where(eq(loadBalancers.id, id)).get()!;

  before(async () => {
    h = createHarness({ failoverAfter: 2, autoFailover: true, autoFailbackAfterMs: PERIOD });
    for (const region of REGIONS) {
      lbs[region] = await startFakeLb({ id: `lb-${region}`, region, token: TEST_TOKEN });
      createRegion(h.rt, OPERATOR, { name: region });
      createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: lbs[region]!.url, region, crossRegion: "direct" });
      createReplica(h.rt, OPERATOR, { name: `${region}-a`, url: "http://127.0.0.1:9", region, engine: "sglang", model: "m", homeLbId: `lb-${region}` });
    }
    h.rt.db.insert(observedRtts).values({ fromRegion: "us-ashburn", toRegion: "eu-frankfurt", rttMs: 292, updatedAt: 0 }).run();
    h.rt.start();
    await h.rt.health.tick();
  });
  after(async () => {
    h.close();
    for (const lb of Object.values(lbs)) await lb.close();
  });

  test("an LB the health monitor failed over comes back after answering for the healthy period, audited as a system action", async () => {
    lbs["us-ashburn"]!.healthy = false;
    await h.rt.health.tick();
    await h.rt.health.tick();
    assert.equal(row("lb-us-ashburn").state, "failed-over");
    assert.equal(row("lb-us-ashburn").failedOverAutomatically, true);
    assert.equal(entrypointMap(h.rt)["us-ashburn"]?.lbId, "lb-eu-frankfurt");

    // The LB answers again; the period is measured on the probes' clock (passed in here).
    lbs["us-ashburn"]!.healthy = true;
    await h.rt.health.tick();
    assert.equal(row("lb-us-ashburn").state, "failed-over", "one healthy probe is not a healthy period");
    assert.ok(listLbs(h.rt).find((lb) => lb.id === "lb-us-ashburn")!.autoFailbackAt! > Date.now(), "the page shows when it fails back");
    const t0 = Date.now() + 1_000;
    h.rt.autoFailback.afterProbe(row("lb-us-ashburn"), false, t0);
    h.rt.autoFailback.afterProbe(row("lb-us-ashburn"), true, t0);
    assert.equal(h.rt.autoFailback.dueAt(row("lb-us-ashburn")), t0 + PERIOD, "a failed probe restarts the count");
    h.rt.autoFailback.afterProbe(row("lb-us-ashburn"), true, t0 + PERIOD - 1);
    assert.equal(row("lb-us-ashburn").state, "failed-over");
    h.rt.autoFailback.afterProbe(row("lb-us-ashburn"), true, t0 + PERIOD);

    const back = row("lb-us-ashburn");
    assert.deepEqual(
      { state: back.state, failedOverTo: back.failedOverTo, auto: back.failedOverAutomatically },
      { state: "healthy", failedOverTo: null, auto: false },
    );
    assert.equal(entrypointMap(h.rt)["us-ashburn"]?.lbId, "lb-us-ashburn");
    assert.equal(listReplicas(h.rt).find((r) => r.id === "us-ashburn-a")?.homeLbId, "lb-us-ashburn");
    const [entry] = listAudit(h.rt, { action: "lb.failback" });
    assert.ok(entry, "the failback is audited");
    assert.equal(entry.action, "lb.failback.automatic");
    assert.equal(entry.actor, "system:health-monitor");
    assert.equal((entry.after as { healthyForMs?: number }).healthyForMs, PERIOD);
    // The LB gets its own replicas back in its next config.
    await waitFor(() => lbs["us-ashburn"]!.configs.at(-1)?.replicas.some((r) => r.id === "us-ashburn-a"), 5_000, "config with its replica");
  });

  test("an operator's failover stays until an operator fails it back", async () => {
    failoverLb(h.rt, OPERATOR, { id: "lb-us-ashburn" });
    assert.equal(row("lb-us-ashburn").failedOverAutomatically, false);
    h.rt.autoFailback.afterProbe(row("lb-us-ashburn"), true, 0);
    h.rt.autoFailback.afterProbe(row("lb-us-ashburn"), true, 100 * PERIOD);
    assert.equal(row("lb-us-ashburn").state, "failed-over");
    assert.equal(listLbs(h.rt).find((lb) => lb.id === "lb-us-ashburn")?.autoFailbackAt, null);
    assert.equal(listAudit(h.rt, { action: "lb.failback" }).length, 1, "no second failback");
  });
});

describe("automatic failback through the health monitor's own probes", () => {
  test("fails back on the probes alone once the (short) period has passed", async () => {
    const h = createHarness({ failoverAfter: 1, autoFailover: true, autoFailbackAfterMs: 1 });
    const fakes: FakeLb[] = [];
    try {
      for (const region of ["us-ashburn", "eu-frankfurt"]) {
        const fake = await startFakeLb({ id: `lb-${region}`, region, token: TEST_TOKEN });
        fakes.push(fake);
        createRegion(h.rt, OPERATOR, { name: region });
        createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: fake.url, region, crossRegion: "direct" });
      }
      h.rt.start();
      await h.rt.health.tick();
      fakes[0]!.healthy = false;
      await h.rt.health.tick();
      assert.equal(listLbs(h.rt).find((lb) => lb.id === "lb-us-ashburn")?.state, "failed-over");
      fakes[0]!.healthy = true;
      await waitFor(
        async () => {
          await h.rt.health.tick();
          return listLbs(h.rt).find((lb) => lb.id === "lb-us-ashburn")?.state === "healthy";
        },
        10_000,
        "the automatic failback",
      );
      assert.equal(listAudit(h.rt, { action: "lb.failback.automatic" }).length, 1);
    } finally {
      h.close();
      for (const fake of fakes) await fake.close();
    }
  });
});
