// A replica added with "default (region's LB)" is owned by that LB, explicitly: its row names the LB,
// the replicas page shows it, the LB lists it as owned, and failover moves it with the LB's own.
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { eq } from "drizzle-orm";
import { replicas } from "@meridian/db";
import { createHarness, OPERATOR, type Harness } from "../testing/harness";
import { listAudit } from "./audit";
import { createLb, failbackLb, failoverLb, listLbs } from "./lbs";
import { createRegion, listRegions } from "./regions";
import { createReplica, listReplicas, updateReplica } from "./replicas";
import { SYSTEM_CONSOLE } from "../audit-trail";
import { assignDefaultHomes } from "./home-lb";

const replica = (name: string, region: string, homeLbId?: string | null) => ({
  name,
  url: `http://127.0.0.1:9/${name}`,
  region,
  engine: "sglang" as const,
  model: "m",
  ...(homeLbId !== undefined ? { homeLbId } : {}),
});

describe("default home LB", () => {
  let h: Harness;
  before(() => {
    h = createHarness();
    for (const region of ["us-ashburn", "eu-frankfurt", "us-west"]) createRegion(h.rt, OPERATOR, { name: region });
    createLb(h.rt, OPERATOR, { name: "lb-us-ashburn", url: "http://127.0.0.1:9/us", region: "us-ashburn" }, "lb-us-ashburn");
    createLb(h.rt, OPERATOR, { name: "lb-eu-frankfurt", url: "http://127.0.0.1:9/eu", region: "eu-frankfurt" }, "lb-eu-frankfurt");
  });
  after(() => h.close());

  const view = (id: string) => listReplicas(h.rt).find((r) => r.id === id)!;
  const owned = (lbId: string) => listLbs(h.rt).find((lb) => lb.id === lbId)!.replicas;

  test("no home chosen: the region's LB, written into the row and listed as owned", () => {
    const { id } = createReplica(h.rt, OPERATOR, replica("us-c", "us-ashburn"));
    assert.equal(h.rt.db.select().from(replicas).where(eq(replicas.id, id)).get()?.homeLbId, "lb-us-ashburn");
    assert.equal(view(id).homeLbId, "lb-us-ashburn");
    assert.equal(view(id).homeLbName, "lb-us-ashburn");
    assert.deepEqual(owned("lb-us-ashburn"), [id]);
    assert.equal(listRegions(h.rt).find((r) => r.name === "us-ashburn")?.defaultHomeLbId, "lb-us-ashburn");
    const created = listAudit(h.rt, { action: "replica.create" })[0];
    assert.match(JSON.stringify(created?.after), /"homeLbId":"lb-us-ashburn"/, "the audit records the home it got");
  });

  test("an explicit home is kept", () => {
    const { id } = createReplica(h.rt, OPERATOR, replica("us-on-eu", "us-ashburn", "lb-eu-frankfurt"));
    assert.equal(view(id).homeLbId, "lb-eu-frankfurt");
  });

  test("a region without an LB: no home until an LB is created there, which takes it", () => {
    const { id } = createReplica(h.rt, OPERATOR, replica("west-a", "us-west"));
    assert.equal(view(id).homeLbId, null);
    assert.equal(listRegions(h.rt).find((r) => r.name === "us-west")?.defaultHomeLbId, null);
    createLb(h.rt, OPERATOR, { name: "lb-us-west", url: "http://127.0.0.1:9/west", region: "us-west" }, "lb-us-west");
    assert.equal(view(id).homeLbId, "lb-us-west");
    assert.deepEqual(owned("lb-us-west"), [id]);
    assert.equal(listAudit(h.rt, { action: "replica.home-default" })[0]?.target, `replica:${id}`);
  });

  test("homed on a failed-over LB: served by its stand-in, and back with failback", () => {
    failoverLb(h.rt, OPERATOR, { id: "lb-eu-frankfurt" });
    const { id } = createReplica(h.rt, OPERATOR, replica("eu-late", "eu-frankfurt"));
    const stand = listLbs(h.rt).find((lb) => lb.id === "lb-eu-frankfurt")!.failedOverTo!;
    assert.equal(view(id).configuredHomeLbId, "lb-eu-frankfurt");
    assert.equal(view(id).homeLbId, stand);
    assert.equal(view(id).rehomed, true);
    failbackLb(h.rt, OPERATOR, { id: "lb-eu-frankfurt" });
    assert.equal(view(id).homeLbId, "lb-eu-frankfurt");
  });

  test("an update to a null home goes back to the region's default", () => {
    const { id } = createReplica(h.rt, OPERATOR, replica("us-d", "us-ashburn", "lb-eu-frankfurt"));
    updateReplica(h.rt, OPERATOR, { id, homeLbId: null });
    assert.equal(view(id).homeLbId, "lb-us-ashburn");
  });

  test("rows written without a home by an older console are homed at startup", () => {
    h.rt.db.update(replicas).set({ homeLbId: null }).where(eq(replicas.name, "us-c")).run();
    assert.deepEqual(assignDefaultHomes(h.rt.db, SYSTEM_CONSOLE), ["us-c"]);
    assert.equal(view("us-c").homeLbId, "lb-us-ashburn");
  });
});
