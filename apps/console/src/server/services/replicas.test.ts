import { strict as assert } from "node:assert";
import { after, test } from "node:test";
import { type FakeLb, startFakeLb } from "../testing/fake-lb";
import { createHarness, type Harness, OPERATOR, TEST_TOKEN, waitFor } from "../testing/harness";
import { createLb } from "./lbs";
import { overviewSummary } from "./overview";
import { createRegion } from "./regions";
import { createReplica, listReplicas } from "./replicas";

let h: Harness;
let lb: FakeLb;
after(async () => {
  await h?.close();
  await lb?.close();
});

const live = async () => {
  const r = (await listReplicas(h.rt))[0]!;
  const o = (await overviewSummary(h.rt)).regions[0]!.replicas[0]!;
  return { healthy: r.healthy, inFlight: r.inFlight, queuedTokens: r.queuedTokens, overview: { healthy: o.healthy, inFlight: o.inFlight } };
};

test("a replica no answering LB reports on is unknown (not 'unhealthy' with 0 in flight) until its LB reports it", async () => {
  lb = await startFakeLb({ id: "lb-us", region: "us", token: TEST_TOKEN });
  h = await createHarness();
  await createRegion(h.rt, OPERATOR, { name: "us" });
  await createLb(h.rt, OPERATOR, { name: "lb-us", url: lb.url, region: "us" }, "lb-us");
  await createReplica(h.rt, OPERATOR, { name: "us-1", url: "http://127.0.0.1:9", region: "us", engine: "sglang", model: "m" });

  // The console just started: the LB has not been probed yet.
  const unknown = { healthy: null, inFlight: null, queuedTokens: null, overview: { healthy: null, inFlight: null } };
  assert.deepEqual(await live(), unknown);

  // The LB runs the replica and reports it (the fake reports every replica healthy, 1 in flight, 10 queued).
  await h.rt.start();
  await h.rt.health.tick();
  await waitFor(() => lb.version > 0, 10_000, "the config pushed");
  await h.rt.health.tick();
  assert.deepEqual(await live(), { healthy: true, inFlight: 1, queuedTokens: 10, overview: { healthy: true, inFlight: 1 } });

  // The LB stops answering: what it last said about the engine is no longer known, not "0 in flight".
  lb.healthy = false;
  await h.rt.health.tick();
  assert.equal(h.rt.lbHealth.isHealthy("lb-us"), false);
  assert.deepEqual(await live(), unknown);
});
