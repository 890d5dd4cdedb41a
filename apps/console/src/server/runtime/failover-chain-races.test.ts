// A failover chain racing the operations of the LB it stands in for, on PostgreSQL (read committed):
// lb-us is failed over to lb-eu when lb-eu fails over to lb-ap, which repoints lb-us's stand-in. A
// failback of lb-us, or a replica created in us, holding lb-us's row at that moment must run before
// or after the failover, not deadlock with it (review r39/4). The other side's write is held
// (held-writes.ts) until the failover is seen waiting for it; SQLite serialises write transactions.
import { strict as assert } from "node:assert";
import { after, beforeEach, test } from "node:test";
import { eq } from "drizzle-orm";
import { createReplica } from "../services/replicas";
import type { FakeLb } from "../testing/fake-lb";
import { createHarness, type Harness, OPERATOR, waitFor } from "../testing/harness";
import { holdWrites, waitingFor } from "../testing/held-writes";
import { startThreeRegionFleet } from "../testing/three-region-fleet";
import { FailoverService } from "./failover";

let h: Harness | null = null;
let fakes: FakeLb[] = [];

async function chainOfThree(): Promise<Harness> {
  const harness = await createHarness({ autoFailover: false });
  fakes = await startThreeRegionFleet(harness);
  await harness.rt.failover.failover("lb-us", OPERATOR); // us → eu
  return harness;
}

const outcome = <T>(work: Promise<T>): Promise<string> =>
  work.then(
    () => "done",
    (error: unknown) => `refused: ${error instanceof Error ? error.message : String(error)}`,
  );

beforeEach(async () => {
  await h?.close();
  h = null;
  for (const lb of fakes) await lb.close();
  fakes = [];
});
after(async () => {
  await h?.close();
  for (const lb of fakes) await lb.close();
});

test("lb-us failing back while its stand-in fails over: both go through, us-a ends home", async (t) => {
  if (process.env.MERIDIAN_TEST_STORE !== "pg") return t.skip("SQLite serialises write transactions");
  h = await chainOfThree();
  const held = holdWrites(h.rt.store, "update");
  const deps = (h.rt.failover as unknown as { deps: ConstructorParameters<typeof FailoverService>[0] }).deps;
  const failback = outcome(new FailoverService({ ...deps, store: held.store }).failback("lb-us", OPERATOR));
  const { backendPid } = await held.reached; // lb-us locked, its replicas about to be moved home
  const failover = outcome(h.rt.failover.failover("lb-eu", OPERATOR)); // eu → ap: repoints lb-us
  await waitFor(async () => (await waitingFor(h!.database, backendPid, "update%failed_over_to%")) > 0, 10_000, "the failover waits for lb-us's row");
  held.release();
  assert.deepEqual({ failback: await failback, failover: await failover }, { failback: "done", failover: "done" });
  const { loadBalancers, replicas } = h.rt.store.tables;
  const [usA] = await h.rt.store.db.select().from(replicas).where(eq(replicas.id, "us-a"));
  const [lbUs] = await h.rt.store.db.select().from(loadBalancers).where(eq(loadBalancers.id, "lb-us"));
  assert.deepEqual({ rehomedTo: usA?.rehomedToLbId, lbUs: lbUs?.state, standIn: lbUs?.failedOverTo }, { rehomedTo: null, lbUs: "healthy", standIn: null });
});

test("a replica created in us while us's stand-in fails over ends on the new stand-in", async (t) => {
  if (process.env.MERIDIAN_TEST_STORE !== "pg") return t.skip("SQLite serialises write transactions");
  h = await chainOfThree();
  const held = holdWrites(h.rt.store, "insert");
  const creating = createReplica(Object.create(h.rt, { store: { value: held.store } }), OPERATOR, {
    name: "us-new",
    url: "http://127.0.0.1:8",
    region: "us",
    engine: "sglang",
    model: "m",
  });
  const { backendPid } = await held.reached; // lb-us locked, its stand-in (lb-eu) read, the insert held
  const failover = outcome(h.rt.failover.failover("lb-eu", OPERATOR)); // eu → ap: repoints lb-us
  await waitFor(async () => (await waitingFor(h!.database, backendPid, "update%failed_over_to%")) > 0, 10_000, "the failover waits for lb-us's row");
  held.release();
  const { id } = await creating;
  assert.equal(await failover, "done");
  const { replicas } = h.rt.store.tables;
  const [row] = await h.rt.store.db.select().from(replicas).where(eq(replicas.id, id));
  assert.equal(row?.rehomedToLbId, "lb-ap", "served by the live stand-in, not the failed-over lb-eu");
});
