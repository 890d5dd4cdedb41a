// A running console over two regions, us and eu (80 ms apart as observed), each with a fake LB that
// has proved itself, and the replicas each region's LB is home to: the stage for failover tests.
import "server-only";
import type { CrossRegionMode } from "@meridian/routing/types";
import { provenLbIds } from "../runtime/lb-proof-rows";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createReplica } from "../services/replicas";
import { type FakeLb, startFakeLb } from "./fake-lb";
import { type Harness, OPERATOR, TEST_TOKEN, waitFor } from "./harness";

/** Starts the fleet on `h` (its runtime started, one health round run); the caller closes the LBs. */
export async function startTwoRegionFleet(h: Harness, options: { replicas: { us: string[]; eu: string[] }; crossRegion?: CrossRegionMode }): Promise<FakeLb[]> {
  const lbs: FakeLb[] = [];
  for (const region of ["us", "eu"] as const) {
    const lb = await startFakeLb({ id: `lb-${region}`, region, token: TEST_TOKEN });
    lbs.push(lb);
    await createRegion(h.rt, OPERATOR, { name: region });
    await createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: lb.url, region, ...(options.crossRegion ? { crossRegion: options.crossRegion } : {}) });
    for (const name of options.replicas[region]) {
      await createReplica(h.rt, OPERATOR, { name, url: "http://127.0.0.1:9", region, engine: "sglang", model: "m", homeLbId: `lb-${region}` });
    }
  }
  await h.rt.store.db.insert(h.rt.store.tables.observedRtts).values({ fromRegion: "us", toRegion: "eu", rttMs: 80, updatedAt: 0 });
  await h.rt.start();
  await h.rt.health.tick();
  await waitFor(async () => (await provenLbIds(h.rt.store)).size === 2, 10_000, "every LB proven");
  return lbs;
}
