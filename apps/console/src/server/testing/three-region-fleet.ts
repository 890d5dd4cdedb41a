// A running console over three regions, us, eu and ap (us–eu 80 ms, eu–ap 150 ms, us–ap 200 ms as
// observed), each with a fake LB that has proved itself (via-peer) and one replica homed on it: the
// stage for failover chains (us fails over to eu, then eu to ap).
import "server-only";
import { provenLbIds } from "../runtime/lb-proof-rows";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createReplica } from "../services/replicas";
import { type FakeLb, startFakeLb } from "./fake-lb";
import { type Harness, OPERATOR, TEST_TOKEN, waitFor } from "./harness";

/** Starts the fleet on `h` (its runtime started, one health round run); the caller closes the LBs.
 * The replicas are `us-a`, `eu-a` and `ap-a`; the LBs `lb-us`, `lb-eu` and `lb-ap`. */
export async function startThreeRegionFleet(h: Harness): Promise<FakeLb[]> {
  const lbs: FakeLb[] = [];
  for (const region of ["us", "eu", "ap"]) {
    const lb = await startFakeLb({ id: `lb-${region}`, region, token: TEST_TOKEN });
    lbs.push(lb);
    await createRegion(h.rt, OPERATOR, { name: region });
    await createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: lb.url, region, crossRegion: "via-peer" });
    await createReplica(h.rt, OPERATOR, { name: `${region}-a`, url: "http://127.0.0.1:9", region, engine: "sglang", model: "m" });
  }
  const rtt = h.rt.store.tables.observedRtts;
  await h.rt.store.db.insert(rtt).values({ fromRegion: "us", toRegion: "eu", rttMs: 80, updatedAt: 0 });
  await h.rt.store.db.insert(rtt).values({ fromRegion: "us", toRegion: "ap", rttMs: 200, updatedAt: 0 });
  await h.rt.store.db.insert(rtt).values({ fromRegion: "eu", toRegion: "ap", rttMs: 150, updatedAt: 0 });
  await h.rt.start();
  await h.rt.health.tick();
  await waitFor(async () => (await provenLbIds(h.rt.store)).size === 3, 10_000, "every LB proven");
  return lbs;
}
