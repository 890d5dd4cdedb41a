// A console that was stopped (SIGTERM: instrumentation-node.ts calls runtime.stop()) stays stopped.
// Next keeps serving requests on kept-alive connections while it shuts down, and every request asks
// getRuntime({ start: true }): the runtime used to start again, its elector took back the lease it
// had just released without starting any duty, and its health monitor, whose LB client stop() had
// closed, saw every LB fail and failed them over in the shared database, while no other console
// could take over.
import { strict as assert } from "node:assert";
import { after, test } from "node:test";
import pino from "pino";
import { LeaderElector } from "../leadership/leader-elector";
import { DEFAULT_LEASE_TIMING } from "../leadership/lease";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { createHarness, type Harness, OPERATOR, TEST_TOKEN, waitFor } from "../testing/harness";

let h: Harness;
const fakes: FakeLb[] = [];
after(async () => {
  await h?.close();
  for (const fake of fakes) await fake.close();
});

test("a request reaching a stopped console neither takes the lease back nor fails the LBs over", async () => {
  h = await createHarness({ failoverAfter: 2, autoFailover: true });
  for (const region of ["us-ashburn", "eu-frankfurt"]) {
    const fake = await startFakeLb({ id: `lb-${region}`, region, token: TEST_TOKEN });
    fakes.push(fake);
    await createRegion(h.rt, OPERATOR, { name: region });
    await createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: fake.url, region, crossRegion: "direct" }, `lb-${region}`);
  }
  await h.rt.start();
  await waitFor(() => h.rt.leadership.view().isLeader, 10_000, "the console leads");

  await h.rt.stop();
  // The next request on a kept-alive connection: getRuntime({ start: true }).
  await h.rt.start();
  // Its elector's round (as its loop would run it), then another console's.
  await h.rt.leadership.tick();
  const elected: number[] = [];
  const other = new LeaderElector({
    store: h.rt.store,
    log: pino({ level: "silent" }),
    self: { id: "other-console", url: null },
    timing: DEFAULT_LEASE_TIMING,
    now: Date.now,
    onElected: (term) => elected.push(term),
    onDeposed: () => undefined,
  });
  await other.tick();
  assert.equal(h.rt.leadership.view().isLeader, false, "the stopped console does not lead");
  assert.deepEqual(elected, [2], "the other console takes over at once");

  // Two health rounds (failoverAfter) on the stopped console: it acts on nothing.
  await h.rt.health.tick();
  await h.rt.health.tick();
  const states = (await h.rt.store.db.select().from(h.rt.store.tables.loadBalancers)).map((lb) => `${lb.id}:${lb.state}`).sort();
  assert.deepEqual(states, ["lb-eu-frankfurt:healthy", "lb-us-ashburn:healthy"], "the LBs (all answering) keep their state");
  await other.stop();
});
