// An operator's edit of a replica (its URL, say) while its LB fails over keeps the failover's
// re-home: the replica stays served by the stand-in. On PostgreSQL (read committed) the edit used to
// write every column back from its earlier read, the old rehomedToLbId (null) included, leaving the
// replica on the failed LB. The edit's UPDATE is held on a gate until the failover committed: the
// interleaving a slow round trip gives. SQLite serialises the two transactions (the failover would
// wait for the gated edit), so the test runs on PostgreSQL only.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { eq } from "drizzle-orm";
import { createHarness, type Harness, OPERATOR } from "../testing/harness";
import type { FakeLb } from "../testing/fake-lb";
import { holdWrites } from "../testing/held-writes";
import { startTwoRegionFleet } from "../testing/two-region-fleet";
import { updateReplica } from "./replicas";

let h: Harness;
let lbs: FakeLb[] = [];
before(async () => {
  h = await createHarness({ autoFailover: false });
  lbs = await startTwoRegionFleet(h, { replicas: { us: ["us-a"], eu: [] } });
});
after(async () => {
  await h?.close();
  for (const lb of lbs) await lb.close();
});

test("a replica edited while its LB fails over stays re-homed to the stand-in", async (t) => {
  if (h.rt.store.dialect !== "pg") return t.skip("SQLite serialises write transactions");
  // The service's own store, with the UPDATE of the replica held until the failover committed.
  const held = holdWrites(h.rt.store, "update");
  const rt = Object.create(h.rt, { store: { value: held.store } });
  const edit = updateReplica(rt, OPERATOR, { id: "us-a", url: "http://127.0.0.1:10" });
  await held.reached; // the edit has read the replica and is about to write it
  const failover = await h.rt.failover.failover("lb-us", OPERATOR);
  assert.deepEqual(failover.movedReplicas, ["us-a"]);
  held.release();
  await edit;
  const { replicas } = h.rt.store.tables;
  const [row] = await h.rt.store.db.select().from(replicas).where(eq(replicas.id, "us-a"));
  assert.equal(row?.url, "http://127.0.0.1:10");
  assert.equal(row?.rehomedToLbId, "lb-eu", "served by the stand-in while lb-us is failed over");
});
