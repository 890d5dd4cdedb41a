// The pause a tuner takes while its LB's policy ignores the weights is the leader's write, fenced by
// its lease like every other write of the leader's: a follower reading the tuner (its pages, an
// operator's action) holds the pause in memory and writes nothing; a deposed leader that has not
// noticed yet writes nothing either, and does not retry forever; the leader writes it. Runs on both stores.
import { strict as assert } from "node:assert";
import { after, before, beforeEach, test } from "node:test";
import { eq } from "drizzle-orm";
import pino from "pino";
import { LEASE_NAME } from "../leadership/leader-elector";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createHarness, type Harness, OPERATOR } from "../testing/harness";
import { currentRun } from "./tuner-runs";
import { TunerService } from "./tuner-service";

const LB = "lb-a";
/** The term the lease row holds: the leader's. */
const LEASE_TERM = 7;
let h: Harness;

/** A tuner service on the harness's database that leads under `term` (null: follows). */
function serviceAt(term: number | null): TunerService {
  return new TunerService({
    store: h.rt.store,
    log: pino({ level: "silent" }),
    telemetry: { onEvent: () => {} },
    publisher: { onNewVersion: () => {}, publish: async () => null },
    leadership: { currentTerm: () => term },
  });
}

/** The LB's open run as stored: its revision and whether its state says paused. */
async function storedRun(): Promise<{ updatedAt: number; paused: boolean }> {
  const run = await currentRun(h.rt.store, LB);
  assert.ok(run?.stateJson, "the LB has a run");
  return { updatedAt: run.updatedAt, paused: /least-load/.test(run.stateJson) };
}

before(async () => {
  h = await createHarness();
  await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
  await createLb(h.rt, OPERATOR, { name: LB, url: "http://127.0.0.1:9", region: "us-ashburn" });
  const { db, tables } = h.rt.store;
  const now = Date.now();
  await db.insert(tables.consoleLeases).values({ name: LEASE_NAME, holder: "leader", term: LEASE_TERM, expiresAt: now + 60_000, renewedAt: now });
});
after(async () => {
  await h?.close();
});

beforeEach(async () => {
  // A run on gorgo (not paused), then the LB moved to a policy that ignores the weights, as another
  // console's write would leave it before any tuner here heard of it.
  const { db, tables } = h.rt.store;
  await db.update(tables.loadBalancers).set({ policy: "gorgo" }).where(eq(tables.loadBalancers.id, LB));
  await serviceAt(LEASE_TERM).ensure(LB);
  await db.update(tables.loadBalancers).set({ policy: "least-load" }).where(eq(tables.loadBalancers.id, LB));
  assert.equal((await storedRun()).paused, false);
});

test("a follower shows the pause but does not write it", async () => {
  const before = await storedRun();
  const shown = await serviceAt(null).describe(LB);
  assert.match(shown.paused ?? "", /least-load/, "its page shows the pause");
  assert.deepEqual(await storedRun(), before, "the run as stored is untouched");
});

test("a deposed leader (its term no longer the lease's) writes nothing and answers", async () => {
  const before = await storedRun();
  const live = await serviceAt(LEASE_TERM - 1).ensure(LB);
  assert.match(live.tuner.pausedReason ?? "", /least-load/);
  assert.deepEqual(await storedRun(), before, "the run as stored is untouched");
});

test("a deposed leader's reconcile round ends: it does not reload and write again and again", async () => {
  const service = serviceAt(LEASE_TERM - 1);
  await service.ensure(LB);
  // Each reload reads the run again (load()); a write the lease refused reloaded, published and
  // wrote again, in a loop that held the serial queue until the console noticed it had stopped leading.
  let loads = 0;
  const engine = service as unknown as { load: (...args: unknown[]) => Promise<unknown> };
  const load = engine.load.bind(service);
  engine.load = (...args) => {
    loads++;
    if (loads > 50) throw new Error("reconcile kept reloading");
    return load(...args);
  };
  const before = await storedRun();
  await service.reconcile();
  assert.ok(loads <= 1, `one reconcile round reloaded ${loads} times`);
  assert.deepEqual(await storedRun(), before, "the run as stored is untouched");
});

test("the leader writes the pause", async () => {
  const before = await storedRun();
  await serviceAt(LEASE_TERM).describe(LB);
  const after = await storedRun();
  assert.equal(after.paused, true);
  assert.ok(after.updatedAt > before.updatedAt);
});
