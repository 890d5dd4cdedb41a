// Two consoles in one process on one database (SQLite file or PostgreSQL): the first leads, the second follows. What an
// operator does on the follower reaches the LB through the leader, and the follower shows the
// leader's tuner as the database holds it; its pages see live LB health from its own probes.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { createDatabase, type Database } from "@meridian/db";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createReplica } from "../services/replicas";
import { fleetTuner, setManualWeights, setTunerScope, startTuner, stopTuner, tunerByLb, updateTuner } from "../services/tuner";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { createHarness, type Harness, OPERATOR, TEST_TOKEN, waitFor } from "../testing/harness";
import { ConsoleRuntime } from "../runtime/runtime";
import { FLEET } from "../runtime/tuner-scope";

let h: Harness;
let lb: FakeLb;
let follower: ConsoleRuntime;
let followerDatabase: Database | undefined;

before(async () => {
  h = await createHarness({ leadership: { id: "leader" } });
  lb = await startFakeLb({ id: "lb-a", region: "us-ashburn", token: TEST_TOKEN });
  await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
  await createLb(h.rt, OPERATOR, { name: "lb-a", url: lb.url, region: "us-ashburn" });
  await createReplica(h.rt, OPERATOR, { name: "r1", url: "http://127.0.0.1:9", region: "us-ashburn", engine: "sglang", model: "m", homeLbId: "lb-a" });
  await updateTuner(h.rt, OPERATOR, { lbId: "lb-a", evaluation: "paper", window: 8, hop: 8 });
  await h.rt.start();
  await waitFor(() => h.rt.leadership.view().isLeader, 10_000, "first console leads");
  followerDatabase = createDatabase(h.settings);
  follower = new ConsoleRuntime(followerDatabase, { ...h.rt.options, leadership: { id: "follower" } });
  await follower.start();
  await waitFor(() => follower.leadership.view().leader === "leader", 10_000, "second console follows");
});

after(async () => {
  // Whatever before() got to: a half-built setup must not keep the process alive.
  if (follower) await follower.stop();
  await followerDatabase?.close();
  await h?.close();
  await lb?.close();
});

test("a tuner started and stepped through the leader is seen on the follower; the follower's stop and manual weights reach the LB through the leader", async () => {
  await startTuner(follower, OPERATOR, { lbId: "lb-a" });
  await waitFor(async () => (await h.rt.tuners.describe("lb-a")).running, 10_000, "the leader picked up the follower's start");
  for (let window = 0; window < 2; window += 1) {
    const { boundVersion } = await h.rt.tuners.describe("lb-a");
    await waitFor(() => boundVersion !== null && lb.version >= boundVersion, 10_000, `version ${boundVersion} live`);
    for (let i = 0; i < 8; i += 1) lb.emit({ configVersion: boundVersion as number, ttftMs: 100 + i });
    await waitFor(async () => (await tunerByLb(follower, { lbId: "lb-a" })).steps.length === window + 1, 10_000, `step ${window + 1} seen on the follower`);
  }
  assert.equal(follower.leadership.view().isLeader, false);

  await stopTuner(follower, OPERATOR, { lbId: "lb-a" });
  await waitFor(async () => !(await h.rt.tuners.describe("lb-a")).running, 10_000, "the leader stopped the tuner");
  await setManualWeights(follower, OPERATOR, { lbId: "lb-a", weights: { rtt: 1.25, queue: 0.3 } });
  await waitFor(() => lb.configs.at(-1)?.weights.rtt === 1.25, 10_000, "manual weights pushed by the leader");
  assert.equal(lb.configs.at(-1)?.weights.queue, 0.3);
  assert.deepEqual((await tunerByLb(h.rt, { lbId: "lb-a" })).weights, { rtt: 1.25, queue: 0.3 });
  assert.equal((await tunerByLb(follower, { lbId: "lb-a" })).mode, "manual");
});

test("an operator's stop on the follower survives the leader's own write of its stale copy (a new config version bound meanwhile)", async () => {
  await startTuner(follower, OPERATOR, { lbId: "lb-a" });
  await waitFor(async () => (await h.rt.tuners.describe("lb-a")).running, 10_000, "the leader picked up the follower's start");
  // The follower stops the tuner; before the leader's reconcile reads that, a config version of the
  // LB is recorded on the leader, which binds its (still running) copy of the tuner and writes it.
  await stopTuner(follower, OPERATOR, { lbId: "lb-a" });
  await h.rt.publisher.publish("lb-a", { force: true });
  await h.rt.tuners.idle();
  await waitFor(async () => !(await h.rt.tuners.describe("lb-a")).running, 10_000, "the leader holds the stop");
  const { db, tables } = h.rt.store;
  const runs = await db.select().from(tables.tunerRuns);
  assert.equal(runs.filter((run) => run.endedAt === null && run.running).length, 0, "no open run is running in the database");
  assert.equal((await tunerByLb(follower, { lbId: "lb-a" })).running, false);
});

test("the follower probes the LBs for its own pages but acts on nothing", async () => {
  await waitFor(() => follower.lbHealth.lb("lb-a")?.healthy === true, 10_000, "the follower's health book");
  assert.equal(follower.telemetry.status().length, 0, "no telemetry subscription on the follower");
});

test("the follower switches the tuning scope to fleet and back; the leader publishes each", async () => {
  await setTunerScope(follower, OPERATOR, { scope: "fleet" });
  await startTuner(follower, OPERATOR, { fleet: true });
  await waitFor(async () => (await h.rt.tuners.describe(FLEET)).running, 10_000, "the leader runs the fleet's tuner");
  const trialId = (await fleetTuner(follower)).trial?.id;
  assert.ok(trialId, "the fleet's tuner runs a trial");
  await waitFor(() => lb.configs.at(-1)?.trial?.id === trialId, 10_000, "the leader put the fleet's trial on the LB");
  await assert.rejects(startTuner(follower, OPERATOR, { lbId: "lb-a" }), /fleet tuner sets the weights of every LB/);

  await setTunerScope(follower, OPERATOR, { scope: "lb" });
  await waitFor(() => lb.configs.at(-1)?.trial === undefined, 10_000, "the leader took the fleet's trial off the LB");
  assert.equal((await tunerByLb(h.rt, { lbId: "lb-a" })).running, false);
  assert.equal((await tunerByLb(follower, { lbId: "lb-a" })).scope, "lb");
});
