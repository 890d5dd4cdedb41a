// Two failovers of one LB at once (the health monitor's automatic one and an operator's click in the
// same incident): one goes through, the other is refused as "already failed over", and failback
// brings the region's entrypoint home. On PostgreSQL (read committed) both used to commit, the second
// recording that it had not taken the region's entrypoint, so failback left the region's clients on
// the LB of the other region. SQLite serialises the two; the test runs on both stores.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { eq } from "drizzle-orm";
import { createHarness, type Harness, OPERATOR, TEST_TOKEN, waitFor } from "../testing/harness";
import { type FakeLb, startFakeLb } from "../testing/fake-lb";
import { listAudit } from "../services/audit";
import { createLb, entrypointMap, failbackLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createReplica } from "../services/replicas";
import { provenLbIds } from "./lb-proof-rows";
import { SYSTEM_HEALTH } from "../audit-trail";

const REGIONS = ["us", "eu"] as const;
let h: Harness;
const lbs: FakeLb[] = [];
before(async () => {
  h = await createHarness({ failoverAfter: 2, autoFailover: false });
  for (const region of REGIONS) {
    const lb = await startFakeLb({ id: `lb-${region}`, region, token: TEST_TOKEN });
    lbs.push(lb);
    await createRegion(h.rt, OPERATOR, { name: region });
    await createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: lb.url, region, crossRegion: "via-peer" });
    for (const n of ["a", "b", "c"]) {
      await createReplica(h.rt, OPERATOR, {
        name: `${region}-${n}`,
        url: "http://127.0.0.1:9",
        region,
        engine: "sglang",
        model: "m",
        homeLbId: `lb-${region}`,
      });
    }
  }
  await h.rt.store.db.insert(h.rt.store.tables.observedRtts).values({ fromRegion: "us", toRegion: "eu", rttMs: 80, updatedAt: 0 });
  await h.rt.start();
  await h.rt.health.tick();
  await waitFor(async () => (await provenLbIds(h.rt.store)).size === 2, 10_000, "every LB proven");
});
after(async () => {
  await h?.close();
  for (const lb of lbs) await lb.close();
});

test("two failovers of one LB at once: one is refused, and failback brings the region's entrypoint home", async () => {
  const outcomes = await Promise.allSettled([h.rt.failover.failover("lb-us", SYSTEM_HEALTH, { automatic: true }), h.rt.failover.failover("lb-us", OPERATOR)]);
  const failovers = (await listAudit(h.rt, { action: "lb.failover" })).length;
  const [row] = await h.rt.store.db.select().from(h.rt.store.tables.loadBalancers).where(eq(h.rt.store.tables.loadBalancers.id, "lb-us"));
  await failbackLb(h.rt, OPERATOR, { id: "lb-us" });
  const home = (await entrypointMap(h.rt)).us?.lbId;
  assert.deepEqual(
    { fulfilled: outcomes.filter((o) => o.status === "fulfilled").length, failoverAuditRows: failovers, usEntrypointAfterFailback: home },
    { fulfilled: 1, failoverAuditRows: 1, usEntrypointAfterFailback: "lb-us" },
    `failedOverEntrypoint stored: ${String(row?.failedOverEntrypoint)}`,
  );
});
