// Where a region's entrypoint goes when an LB arrives in the region or leaves it failed over
// (lb-entrypoints.ts): no region is left sending its clients to a stand-in that no failback will
// call back, and no failback takes an entrypoint its failover never took.
import { strict as assert } from "node:assert";
import { after, beforeEach, test } from "node:test";
import { desc, eq } from "drizzle-orm";
import { provenLbIds } from "../runtime/lb-proof-rows";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { createHarness, type Harness, OPERATOR, TEST_TOKEN, waitFor } from "../testing/harness";
import { createLb, deleteLb, failbackLb, failoverLb, updateLb } from "./lbs";
import { createRegion } from "./regions";

let h: Harness | null = null;
const fakes: FakeLb[] = [];

async function fleet(regions: string[]): Promise<Harness> {
  const harness = await createHarness({ autoFailover: false });
  for (const region of regions) {
    const lb = await startFakeLb({ id: `lb-${region}`, region, token: TEST_TOKEN });
    fakes.push(lb);
    await createRegion(harness.rt, OPERATOR, { name: region });
    await createLb(harness.rt, OPERATOR, { name: `lb-${region}`, url: lb.url, region });
  }
  await harness.rt.store.db.insert(harness.rt.store.tables.observedRtts).values({ fromRegion: "us", toRegion: "eu", rttMs: 80, updatedAt: 0 });
  await harness.rt.start();
  await harness.rt.health.tick();
  await waitFor(async () => (await provenLbIds(harness.rt.store)).size === regions.length, 10_000, "every LB proven");
  return harness;
}

async function entrypoints(harness: Harness): Promise<Record<string, string>> {
  const rows = await harness.rt.store.db.select().from(harness.rt.store.tables.entrypoints);
  return Object.fromEntries(rows.map((r) => [r.regionId, r.lbId]));
}

beforeEach(async () => {
  await h?.close();
  h = null;
});
after(async () => {
  await h?.close();
  for (const lb of fakes) await lb.close();
});

test("the first LB created in a region whose failed-over LB was deleted takes the region's clients back from the stand-in, audited", async () => {
  h = await fleet(["us", "eu", "ap"]);
  await failoverLb(h.rt, OPERATOR, { id: "lb-us" });
  await deleteLb(h.rt, OPERATOR, { id: "lb-us" });
  assert.equal((await entrypoints(h)).us, "lb-eu", "with no LB left in us, its clients stay with the stand-in");
  const { id } = await createLb(h.rt, OPERATOR, { name: "lb-us-new", url: "http://127.0.0.1:9", region: "us" });
  assert.equal((await entrypoints(h)).us, id);
  const { auditLog } = h.rt.store.tables;
  const [row] = await h.rt.store.db.select().from(auditLog).where(eq(auditLog.action, "region.entrypoint-reclaim")).orderBy(desc(auditLog.id)).limit(1);
  assert.deepEqual(
    [row?.target, JSON.parse(row?.before ?? "null"), JSON.parse(row?.after ?? "null")],
    ["region:us", { entrypoint: "lb-eu" }, { entrypoint: id }],
  );
});

test("so does an LB moved into such a region", async () => {
  h = await fleet(["us", "eu", "ap"]);
  await failoverLb(h.rt, OPERATOR, { id: "lb-us" });
  await deleteLb(h.rt, OPERATOR, { id: "lb-us" });
  await updateLb(h.rt, OPERATOR, { id: "lb-ap", region: "us" });
  assert.equal((await entrypoints(h)).us, "lb-ap");
});

test("a stand-in keeps a region's clients while the region's own LB is failed over: its failback reclaims them", async () => {
  h = await fleet(["us", "eu"]);
  await failoverLb(h.rt, OPERATOR, { id: "lb-us" });
  await createLb(h.rt, OPERATOR, { name: "lb-us-2", url: "http://127.0.0.1:9", region: "us" });
  assert.equal((await entrypoints(h)).us, "lb-eu");
  await failbackLb(h.rt, OPERATOR, { id: "lb-us" });
  assert.equal((await entrypoints(h)).us, "lb-us");
});

test("failing back an LB moved to another region while failed over leaves that region's entrypoint alone", async () => {
  h = await fleet(["us", "eu"]);
  await failoverLb(h.rt, OPERATOR, { id: "lb-us" });
  assert.deepEqual(await entrypoints(h), { us: "lb-eu", eu: "lb-eu" });
  await updateLb(h.rt, OPERATOR, { id: "lb-us", region: "eu" });
  await failbackLb(h.rt, OPERATOR, { id: "lb-us" });
  assert.equal((await entrypoints(h)).eu, "lb-eu", "the failover never took eu's entrypoint");
});

test("a failed-over LB moved into a region left with a stand-in leaves the stand-in its clients, and reclaims them at failback", async () => {
  h = await fleet(["us", "eu", "ap"]);
  await failoverLb(h.rt, OPERATOR, { id: "lb-us" });
  await updateLb(h.rt, OPERATOR, { id: "lb-us", region: "ap" });
  await deleteLb(h.rt, OPERATOR, { id: "lb-ap" });
  assert.equal((await entrypoints(h)).us, "lb-eu", "no LB left in us: its clients stay with the stand-in");
  await updateLb(h.rt, OPERATOR, { id: "lb-us", region: "us" }); // back home, still failed over
  assert.equal((await entrypoints(h)).us, "lb-eu", "not handed to an LB that is failed over");
  await failbackLb(h.rt, OPERATOR, { id: "lb-us" });
  assert.equal((await entrypoints(h)).us, "lb-us");
});
