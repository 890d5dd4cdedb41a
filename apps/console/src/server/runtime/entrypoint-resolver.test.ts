// The entrypoint map never hands out a failed LB: a region whose LB is failed (and not failed over,
// here because automatic failover is off) resolves to the nearest healthy LB, or to nothing with an
// alarm in the log, and back to its own LB once that answers again.
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { createHarness, OPERATOR, TEST_TOKEN, type Harness } from "../testing/harness";
import { loggedLines } from "../testing/log-lines";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { STARTUP_GRACE_MS } from "./lb-health";
import { createLb, entrypointMap, listLbs } from "../services/lbs";
import { createRegion } from "../services/regions";

const RTT: [string, string, number][] = [
  ["us-ashburn", "eu-frankfurt", 292],
  ["us-ashburn", "ap-seoul", 464],
  ["eu-frankfurt", "ap-seoul", 510],
];

describe("entrypoint resolution", () => {
  let h: Harness;
  const lbs: Record<string, FakeLb> = {};
  const { log, lines } = loggedLines("info");
  const logged = (region: string) => lines.filter((l) => l.region === region && l.msg.startsWith("entrypoint"));

  before(async () => {
    h = await createHarness({ failoverAfter: 2, autoFailover: false }, log);
    for (const region of ["us-ashburn", "eu-frankfurt", "ap-seoul"]) {
      lbs[region] = await startFakeLb({ id: `lb-${region}`, region, token: TEST_TOKEN });
      await createRegion(h.rt, OPERATOR, { name: region });
      await createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: lbs[region]!.url, region }, `lb-${region}`);
    }
    for (const [from, to, rttMs] of RTT)
      await h.rt.store.db.insert(h.rt.store.tables.observedRtts).values({ fromRegion: from, toRegion: to, rttMs, updatedAt: 0 });
    await h.rt.health.tick();
  });
  after(async () => {
    await h.close();
    for (const lb of Object.values(lbs)) await lb.close();
  });

  test("every region resolves to its own LB while all answer", async () => {
    const map = await entrypointMap(h.rt);
    for (const region of Object.keys(lbs)) {
      assert.equal(map[region]?.status, "assigned");
      assert.equal(map[region]?.lbId, `lb-${region}`);
      assert.equal(map[region]?.url, lbs[region]!.url);
    }
  });

  test("a region whose LB is failed resolves to the nearest healthy LB, never to the failed one", async () => {
    lbs["ap-seoul"]!.healthy = false;
    await h.rt.health.tick();
    // Not yet marked failed (one failed probe), but already not answering: its clients move.
    let seoul = (await entrypointMap(h.rt))["ap-seoul"]!;
    assert.equal(seoul.status, "fallback");
    assert.equal(seoul.lbId, "lb-us-ashburn", "Ashburn (464 ms) is nearer to Seoul than Frankfurt (510 ms)");
    assert.equal(seoul.assignedLbId, "lb-ap-seoul");
    assert.equal(seoul.rttMs, 464);
    assert.match(seoul.reason ?? "", /lb-ap-seoul does not answer its health probe/);

    await h.rt.health.tick();
    assert.equal((await listLbs(h.rt)).find((lb) => lb.id === "lb-ap-seoul")?.state, "failed", "marked failed, not failed over");
    seoul = (await entrypointMap(h.rt))["ap-seoul"]!;
    assert.equal(seoul.lbId, "lb-us-ashburn");
    assert.match(seoul.reason ?? "", /lb-ap-seoul is failed/);
    // The other regions are untouched.
    assert.equal((await entrypointMap(h.rt))["eu-frankfurt"]?.lbId, "lb-eu-frankfurt");
    // Logged once at warn when it happened, not once per resolution.
    const warnings = logged("ap-seoul").filter((l) => l.level === 40);
    assert.equal(warnings.length, 1, "the fallback is logged when it happens, not again per probe round or per client");
  });

  test("with no healthy LB at all a region resolves to nothing, with an alarm", async () => {
    lbs["us-ashburn"]!.healthy = false;
    lbs["eu-frankfurt"]!.healthy = false;
    await h.rt.health.tick();
    const map = await entrypointMap(h.rt);
    for (const region of Object.keys(lbs)) {
      assert.equal(map[region]?.status, "unresolved", region);
      assert.equal(map[region]?.lbId, null);
      assert.equal(map[region]?.url, null);
    }
    assert.equal(logged("eu-frankfurt").filter((l) => l.msg.includes("unresolved")).length, 1);
  });

  test("an LB added after the first probe round takes no clients before its first probe answers", async () => {
    await createRegion(h.rt, OPERATOR, { name: "us-west" });
    await createLb(h.rt, OPERATOR, { name: "lb-us-west", url: "http://127.0.0.1:9", region: "us-west" }, "lb-us-west");
    const before = (await entrypointMap(h.rt))["us-west"]!;
    assert.equal(before.status, "unresolved", "nothing is healthy right now, and the new LB is unknown");
    assert.match(before.reason ?? "", /lb-us-west has not answered a health probe yet/);
    lbs["eu-frankfurt"]!.healthy = true;
    await h.rt.health.tick();
    const after = (await entrypointMap(h.rt))["us-west"]!;
    assert.equal(after.status, "fallback", "probed: dead (nothing listens on port 9)");
    assert.equal(after.lbId, "lb-eu-frankfurt");
    lbs["eu-frankfurt"]!.healthy = false;
    await h.rt.health.tick();
  });

  test("a region goes back to its own LB once it answers again", async () => {
    for (const lb of Object.values(lbs)) lb.healthy = true;
    await h.rt.health.tick();
    const map = await entrypointMap(h.rt);
    for (const region of Object.keys(lbs)) assert.equal(map[region]?.lbId, `lb-${region}`, region);
    assert.ok(logged("ap-seoul").some((l) => l.level === 30 && l.msg.includes("back on its assigned LB")));
  });

  test("an LB that has not answered since the console started is no alarm until the startup grace ends, then one warning", async () => {
    // lb-us-west (nothing listens on port 9) has never answered: every change of its region so far
    // was logged at info, as at a fresh start where the LBs come up after the console.
    const west = () => logged("us-west");
    assert.ok(west().length >= 2, JSON.stringify(west()));
    for (const line of west()) {
      assert.equal(line.level, 30, line.msg);
      assert.match(line.msg, /\(its LB is still starting\)$/);
    }
    h.rt.lbHealth.startGrace(Date.now() - STARTUP_GRACE_MS);
    await h.rt.health.tick();
    await h.rt.health.tick();
    const warnings = west().filter((l) => l.level === 40);
    assert.deepEqual(
      warnings.map((l) => l.msg),
      ["entrypoint falls back to another region's LB"],
      "warned once, when the grace ended",
    );
  });
});
