// Two failovers of one LB at once (the health monitor's automatic one and an operator's click in the
// same incident): one goes through, the other is refused as "already failed over", and failback
// brings the region's entrypoint home. On PostgreSQL (read committed) both used to commit, the second
// recording that it had not taken the region's entrypoint, so failback left the region's clients on
// the LB of the other region. SQLite serialises the two; the test runs on both stores.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { eq } from "drizzle-orm";
import { createHarness, type Harness, OPERATOR } from "../testing/harness";
import type { FakeLb } from "../testing/fake-lb";
import { startTwoRegionFleet } from "../testing/two-region-fleet";
import { listAudit } from "../services/audit";
import { entrypointMap, failbackLb } from "../services/lbs";
import { SYSTEM_HEALTH } from "../audit-trail";

let h: Harness;
let lbs: FakeLb[] = [];
before(async () => {
  h = await createHarness({ failoverAfter: 2, autoFailover: false });
  lbs = await startTwoRegionFleet(h, { crossRegion: "via-peer", replicas: { us: ["us-a", "us-b", "us-c"], eu: ["eu-a", "eu-b", "eu-c"] } });
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
