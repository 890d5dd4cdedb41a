// The region-to-region RTT matrix the regions page shows and failover reads: what each LB reports
// measuring to the replicas of each region, smoothed with the LBs' own RTT average (lb-core's
// nextRttEwma: the first sample seeds it, each next one weighs α = 0.3).
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { RTT_EWMA_ALPHA } from "@meridian/lb-core";
import { createLb } from "../services/lbs";
import { createRegion, rttMatrix } from "../services/regions";
import { createReplica } from "../services/replicas";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { createHarness, type Harness, OPERATOR, TEST_TOKEN, waitFor } from "../testing/harness";

let h: Harness;
let lb: FakeLb;
/** What the LB in us-ashburn reports measuring to eu-frankfurt's replica, per state poll. */
let euRttMs = 100;

const usToEu = async () => {
  const { regions, rttMs } = await rttMatrix(h.rt);
  return rttMs[regions.indexOf("us-ashburn")]?.[regions.indexOf("eu-frankfurt")] ?? null;
};

before(async () => {
  h = await createHarness();
  lb = await startFakeLb({ id: "lb-us", region: "us-ashburn", token: TEST_TOKEN, rttMs: (r) => (r.region === "eu-frankfurt" ? euRttMs : 1) });
  for (const region of ["us-ashburn", "eu-frankfurt"]) await createRegion(h.rt, OPERATOR, { name: region });
  await createLb(h.rt, OPERATOR, { name: "lb-us", url: lb.url, region: "us-ashburn", crossRegion: "direct" });
  await createReplica(h.rt, OPERATOR, { name: "eu-a", url: "http://127.0.0.1:9", region: "eu-frankfurt", engine: "vllm", model: "m" });
  await h.rt.start();
});

after(async () => {
  await h.close();
  await lb.close();
});

test("the first report seeds the RTT between two regions; later ones move it by the LBs' own EWMA", async () => {
  // The LB lists the eu replica once the console's config reached it; its first report seeds the cell.
  const seeded = await waitFor(
    async () => {
      await h.rt.health.tick();
      return await usToEu();
    },
    15_000,
    "us-ashburn → eu-frankfurt observed",
  );
  assert.equal(seeded, 100);
  euRttMs = 200;
  await h.rt.health.tick();
  assert.equal(await usToEu(), RTT_EWMA_ALPHA * 200 + (1 - RTT_EWMA_ALPHA) * 100);
});
