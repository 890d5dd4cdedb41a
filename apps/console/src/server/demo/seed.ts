// Seeds the demo topology into the console's database (MERIDIAN_DEMO=1). Idempotent: existing
// regions, LBs and replicas (by id) are left as the operator last set them; only missing ones are
// created. Known RTTs are seeded so failover has a nearest LB before the first probes.
// Each demo LB's token is written where the demo fleet starts it from (`tokenDir`/<id>.token, mode
// 0600): for an LB created now, or an existing one whose file is gone (then a new token replaces its
// old ones, as an operator would do). A rotation later changes the LB's token without touching the
// file: the LB keeps the rotated token in its credentials file.
import "server-only";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { eq } from "drizzle-orm";
import { SYSTEM_SEED } from "../audit-trail";
import type { ServiceRuntime } from "../services/context";
import { createLb } from "../services/lbs";
import { issueLbToken } from "../services/lb-tokens";
import { createRegion } from "../services/regions";
import { createReplica } from "../services/replicas";
import { FLEET } from "../runtime/tuner-scope";
import { demoTokenFile } from "../../lib/demo-files";
import { DEMO_DISPLAY_NAMES, DEMO_MODEL, DEMO_REGIONS, DEMO_RTT_MS, demoTopology } from "../../lib/demo-topology";

const DEMO_TRIAL = { trial: { lookEvery: 20, maxSamples: 120 } };

function writeToken(tokenDir: string, lbId: string, token: string): void {
  mkdirSync(tokenDir, { recursive: true });
  writeFileSync(demoTokenFile(tokenDir, lbId), `${token}\n`, { mode: 0o600 });
}

/** `tokenDir`: where the demo fleet reads its LBs' tokens (none: tokens are not written, tests). */
export async function seedDemoTopology(rt: ServiceRuntime, options: { basePort: number; host?: string; tokenDir?: string }): Promise<void> {
  const topology = demoTopology(options.basePort, options.host);
  const { db, tables } = rt.store;
  const { loadBalancers, observedRtts, regions, replicas } = tables;
  for (const region of DEMO_REGIONS) {
    const [known] = await db.select().from(regions).where(eq(regions.name, region)).limit(1);
    if (!known) await createRegion(rt, SYSTEM_SEED, { name: region, displayName: DEMO_DISPLAY_NAMES[region] });
  }
  const newLbs: string[] = [];
  for (const lb of topology.lbs) {
    const [existing] = await db.select().from(loadBalancers).where(eq(loadBalancers.id, lb.id)).limit(1);
    if (!existing) {
      const { token } = await createLb(rt, SYSTEM_SEED, { name: lb.name, url: lb.url, region: lb.region, policy: "gorgo", crossRegion: "direct" }, lb.id);
      if (options.tokenDir) writeToken(options.tokenDir, lb.id, token);
      newLbs.push(lb.id);
      continue;
    }
    if (options.tokenDir && !existsSync(demoTokenFile(options.tokenDir, lb.id))) {
      writeToken(options.tokenDir, lb.id, (await issueLbToken(rt, SYSTEM_SEED, { id: lb.id })).token);
    }
    if (existing.url !== lb.url) {
      // Same demo, other ports (MERIDIAN_DEMO_BASE_PORT changed): follow the fleet.
      await db.update(loadBalancers).set({ url: lb.url, adminUrl: null }).where(eq(loadBalancers.id, lb.id));
    }
  }
  for (const engine of topology.engines) {
    const [existing] = await db.select().from(replicas).where(eq(replicas.id, engine.id)).limit(1);
    if (!existing) {
      await createReplica(
        rt,
        SYSTEM_SEED,
        { name: engine.name, url: engine.url, region: engine.region, engine: engine.engine, model: DEMO_MODEL, homeLbId: engine.homeLbId },
        engine.id,
      );
    } else if (existing.url !== engine.url) {
      await db.update(replicas).set({ url: engine.url }).where(eq(replicas.id, engine.id));
    }
  }
  const now = Date.now();
  for (const from of DEMO_REGIONS) {
    for (const to of DEMO_REGIONS) {
      await db.insert(observedRtts).values({ fromRegion: from, toRegion: to, rttMs: DEMO_RTT_MS[from][to], samples: 1, updatedAt: now }).onConflictDoNothing();
    }
  }
  await startDemoTuning(rt, newLbs, newLbs.length === topology.lbs.length);
  await rt.publisher.publishAll();
}

/**
 * The tuner runs A/B trials from the demo's first start (an operator's later stop, or choice of
 * scope, is respected). A fresh demo tunes with one tuner for the fleet: in bench:tuner it did less
 * harm than one tuner per LB over both traces (packages/tuner/README.md, "Modes"). Each LB's own
 * tuner gets the same small trials for when an operator switches to per LB; an LB added to a demo
 * already tuned per LB starts its own tuner. At the demo's request or so per second per LB a
 * 500-sample trial would last minutes, so the demo looks every 20 samples and caps a trial at 120:
 * trials come and go while someone watches.
 */
async function startDemoTuning(rt: ServiceRuntime, newLbs: string[], fresh: boolean): Promise<void> {
  // A new LB in a demo tuned as a fleet has joined the fleet's tuner already.
  if (!fresh && (await rt.tuners.scope()) === "fleet") return;
  for (const lbId of newLbs) await rt.tuners.updateSettings(lbId, DEMO_TRIAL);
  if (!fresh) {
    for (const lbId of newLbs) await rt.tuners.startTuning(lbId);
    return;
  }
  await rt.tuners.setScope("fleet");
  await rt.tuners.updateSettings(FLEET, DEMO_TRIAL);
  await rt.tuners.startTuning(FLEET);
}
