// Seeds the demo topology into the console's database (MERIDIAN_DEMO=1). Idempotent: existing
// regions, LBs and replicas (by id) are left as the operator last set them; only missing ones are
// created. Known RTTs are seeded so failover has a nearest LB before the first probes.
import "server-only";
import { eq } from "drizzle-orm";
import { loadBalancers, observedRtts, regions, replicas } from "@meridian/db";
import { SYSTEM_SEED } from "../audit-trail";
import type { ServiceRuntime } from "../services/context";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createReplica } from "../services/replicas";
import { DEMO_DISPLAY_NAMES, DEMO_MODEL, DEMO_REGIONS, DEMO_RTT_MS, demoTopology } from "../../lib/demo-topology";

export function seedDemoTopology(rt: ServiceRuntime, options: { basePort: number; host?: string }): void {
  const topology = demoTopology(options.basePort, options.host);
  const db = rt.db;
  for (const region of DEMO_REGIONS) {
    if (!db.select().from(regions).where(eq(regions.name, region)).get()) {
      createRegion(rt, SYSTEM_SEED, { name: region, displayName: DEMO_DISPLAY_NAMES[region] });
    }
  }
  const newLbs: string[] = [];
  for (const lb of topology.lbs) {
    const existing = db.select().from(loadBalancers).where(eq(loadBalancers.id, lb.id)).get();
    if (!existing) {
      createLb(rt, SYSTEM_SEED, { name: lb.name, url: lb.url, region: lb.region, policy: "gorgo", crossRegion: "direct" }, lb.id);
      newLbs.push(lb.id);
    } else if (existing.url !== lb.url) {
      // Same demo, other ports (MERIDIAN_DEMO_BASE_PORT changed): follow the fleet.
      db.update(loadBalancers).set({ url: lb.url, adminUrl: null }).where(eq(loadBalancers.id, lb.id)).run();
    }
  }
  for (const engine of topology.engines) {
    const existing = db.select().from(replicas).where(eq(replicas.id, engine.id)).get();
    if (!existing) {
      createReplica(
        rt,
        SYSTEM_SEED,
        { name: engine.name, url: engine.url, region: engine.region, engine: engine.engine, model: DEMO_MODEL, homeLbId: engine.homeLbId },
        engine.id,
      );
    } else if (existing.url !== engine.url) {
      db.update(replicas).set({ url: engine.url }).where(eq(replicas.id, engine.id)).run();
    }
  }
  const now = Date.now();
  for (const from of DEMO_REGIONS) {
    for (const to of DEMO_REGIONS) {
      db.insert(observedRtts).values({ fromRegion: from, toRegion: to, rttMs: DEMO_RTT_MS[from][to], samples: 1, updatedAt: now }).onConflictDoNothing().run();
    }
  }
  // The tuner runs A/B trials on freshly seeded demo LBs (an operator's later stop is respected). At
  // the demo's request or so per second per LB a 500-sample trial would last eight minutes, so the demo
  // looks every 20 samples and caps a trial at 120: trials come and go while someone watches.
  for (const lbId of newLbs) {
    rt.tuners.updateSettings(lbId, { trial: { lookEvery: 20, maxSamples: 120 } });
    rt.tuners.startTuning(lbId);
  }
  rt.publisher.publishAll();
}
