// A replica added with "default (region's LB)" is owned by that LB, explicitly: its row names the LB,
// the replicas page shows it, the LB lists it as owned, and failover moves it with the LB's own.
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { eq } from "drizzle-orm";
import { lbKeyId } from "@meridian/protocol/credentials";
import { createHarness, OPERATOR, TEST_TOKEN, type Harness } from "../testing/harness";
import { listAudit } from "./audit";
import { createLb, failbackLb, failoverLb, listLbs, updateLb } from "./lbs";
import { createRegion, listRegions } from "./regions";
import { createReplica, listReplicas, updateReplica } from "./replicas";
import { SYSTEM_CONSOLE } from "../audit-trail";
import { assignDefaultHomes } from "./home-lb";
import { DomainError } from "../errors";

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
  before(async () => {
    h = await createHarness();
    for (const region of ["us-ashburn", "eu-frankfurt", "us-west"]) await createRegion(h.rt, OPERATOR, { name: region });
    await createLb(h.rt, OPERATOR, { name: "lb-us-ashburn", url: "http://127.0.0.1:9/us", region: "us-ashburn" }, "lb-us-ashburn");
    await createLb(h.rt, OPERATOR, { name: "lb-eu-frankfurt", url: "http://127.0.0.1:9/eu", region: "eu-frankfurt" }, "lb-eu-frankfurt");
    // As if both had proved their tokens at their URLs: only a proven LB is a failover target
    // (runtime/lb-proof-rows.ts). Nothing listens there; these tests are about the rows.
    for (const [lbId, adminBase] of [
      ["lb-us-ashburn", "http://127.0.0.1:9/us"],
      ["lb-eu-frankfurt", "http://127.0.0.1:9/eu"],
    ] as const) {
      await h.rt.store.db.insert(h.rt.store.tables.lbProofs).values({ lbId, adminBase, keyId: lbKeyId(TEST_TOKEN), provenAt: 1 });
    }
  });
  after(() => h.close());

  const view = async (id: string) => (await listReplicas(h.rt)).find((r) => r.id === id)!;
  const owned = async (lbId: string) => (await listLbs(h.rt)).find((lb) => lb.id === lbId)!.replicas;

  test("no home chosen: the region's LB, written into the row and listed as owned", async () => {
    const { db, tables } = h.rt.store;
    const { id } = await createReplica(h.rt, OPERATOR, replica("us-c", "us-ashburn"));
    const [row] = await db.select().from(tables.replicas).where(eq(tables.replicas.id, id));
    assert.equal(row?.homeLbId, "lb-us-ashburn");
    assert.equal((await view(id)).homeLbId, "lb-us-ashburn");
    assert.equal((await view(id)).homeLbName, "lb-us-ashburn");
    assert.deepEqual(await owned("lb-us-ashburn"), [id]);
    assert.equal((await listRegions(h.rt)).find((r) => r.name === "us-ashburn")?.defaultHomeLbId, "lb-us-ashburn");
    const created = (await listAudit(h.rt, { action: "replica.create" }))[0];
    assert.match(JSON.stringify(created?.after), /"homeLbId":"lb-us-ashburn"/, "the audit records the home it got");
  });

  test("an explicit home is kept", async () => {
    await createLb(h.rt, OPERATOR, { name: "lb-us-ashburn-2", url: "http://127.0.0.1:9/us2", region: "us-ashburn" }, "lb-us-ashburn-2");
    const { id } = await createReplica(h.rt, OPERATOR, replica("us-on-2", "us-ashburn", "lb-us-ashburn-2"));
    assert.equal((await view(id)).homeLbId, "lb-us-ashburn-2");
  });

  // In via-peer mode an LB routes directly only to its own region's replicas, and only the home LB
  // lists a replica: homed on another region's LB, it would get no traffic (and move with that LB).
  test("a home LB in another region is refused, on create and on update, with what to do instead", async () => {
    const invalidAs = (message: RegExp) => (error: unknown) => error instanceof DomainError && error.kind === "invalid" && message.test(error.message);
    const elsewhere = /^home LB "lb-eu-frankfurt" is in eu-frankfurt, not us-ashburn: a replica's home LB must be in its region/;
    await assert.rejects(
      () => createReplica(h.rt, OPERATOR, replica("us-on-eu", "us-ashburn", "lb-eu-frankfurt")),
      invalidAs(/^home LB "lb-eu-frankfurt" is in eu-frankfurt, not us-ashburn: .*\(leave it out for the region's default\)$/),
    );
    assert.equal(
      (await listReplicas(h.rt)).find((r) => r.name === "us-on-eu"),
      undefined,
      "nothing was created",
    );
    const { id } = await createReplica(h.rt, OPERATOR, replica("us-e", "us-ashburn"));
    await assert.rejects(() => updateReplica(h.rt, OPERATOR, { id, homeLbId: "lb-eu-frankfurt" }), invalidAs(elsewhere));
    // A move to another region keeps the home only if it is there too.
    await assert.rejects(
      () => updateReplica(h.rt, OPERATOR, { id, region: "eu-frankfurt" }),
      invalidAs(/^home LB "lb-us-ashburn" is in us-ashburn, not eu-frankfurt: .*\(give homeLbId with the new region, null for its default\)$/),
    );
    assert.equal((await view(id)).homeLbId, "lb-us-ashburn", "the refused updates changed nothing");
    assert.equal((await view(id)).region, "us-ashburn");
    await updateReplica(h.rt, OPERATOR, { id, region: "eu-frankfurt", homeLbId: null });
    assert.equal((await view(id)).homeLbId, "lb-eu-frankfurt");
    await updateReplica(h.rt, OPERATOR, { id, region: "us-ashburn", homeLbId: "lb-us-ashburn-2" });
    assert.equal((await view(id)).homeLbId, "lb-us-ashburn-2");
  });

  test("a region without an LB: no home until an LB is created there, which takes it", async () => {
    const { id } = await createReplica(h.rt, OPERATOR, replica("west-a", "us-west"));
    assert.equal((await view(id)).homeLbId, null);
    assert.equal((await listRegions(h.rt)).find((r) => r.name === "us-west")?.defaultHomeLbId, null);
    await createLb(h.rt, OPERATOR, { name: "lb-us-west", url: "http://127.0.0.1:9/west", region: "us-west" }, "lb-us-west");
    assert.equal((await view(id)).homeLbId, "lb-us-west");
    assert.deepEqual(await owned("lb-us-west"), [id]);
    assert.equal((await listAudit(h.rt, { action: "replica.home-default" }))[0]?.target, `replica:${id}`);
  });

  test("homed on a failed-over LB: served by its stand-in, and back with failback", async () => {
    await failoverLb(h.rt, OPERATOR, { id: "lb-eu-frankfurt" });
    const { id } = await createReplica(h.rt, OPERATOR, replica("eu-late", "eu-frankfurt"));
    const stand = (await listLbs(h.rt)).find((lb) => lb.id === "lb-eu-frankfurt")!.failedOverTo!;
    assert.equal((await view(id)).configuredHomeLbId, "lb-eu-frankfurt");
    assert.equal((await view(id)).homeLbId, stand);
    assert.equal((await view(id)).rehomed, true);
    await failbackLb(h.rt, OPERATOR, { id: "lb-eu-frankfurt" });
    assert.equal((await view(id)).homeLbId, "lb-eu-frankfurt");
  });

  test("an update to a null home goes back to the region's default", async () => {
    const { id } = await createReplica(h.rt, OPERATOR, replica("us-d", "us-ashburn", "lb-us-ashburn-2"));
    await updateReplica(h.rt, OPERATOR, { id, homeLbId: null });
    assert.equal((await view(id)).homeLbId, "lb-us-ashburn");
  });

  test("rows written without a home by an older console are homed at startup", async () => {
    const { db, tables } = h.rt.store;
    await db.update(tables.replicas).set({ homeLbId: null }).where(eq(tables.replicas.name, "us-c"));
    assert.deepEqual(await assignDefaultHomes(h.rt.store, SYSTEM_CONSOLE), ["us-c"]);
    assert.equal((await view("us-c")).homeLbId, "lb-us-ashburn");
  });
});

describe("moving an LB to another region", () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
    for (const region of ["us-ashburn", "us-west"]) await createRegion(h.rt, OPERATOR, { name: region });
    await createLb(h.rt, OPERATOR, { name: "lb-a", url: "http://127.0.0.1:9/a", region: "us-ashburn" }, "lb-a");
    await createLb(h.rt, OPERATOR, { name: "lb-b", url: "http://127.0.0.1:9/b", region: "us-ashburn" }, "lb-b");
  });
  after(() => h.close());

  const rows = async () => {
    const { db, tables } = h.rt.store;
    return {
      lbs: Object.fromEntries((await db.select().from(tables.loadBalancers)).map((lb) => [lb.id, lb.regionId])),
      entrypoints: Object.fromEntries((await db.select().from(tables.entrypoints)).map((e) => [e.regionId, e.lbId])),
      homes: Object.fromEntries((await db.select().from(tables.replicas)).map((r) => [r.name, r.homeLbId])),
    };
  };

  test("refused while it serves replicas of its region; once they are homed elsewhere it leaves its region's clients to the other LB and takes the new region's", async () => {
    await createReplica(h.rt, OPERATOR, replica("east-1", "us-ashburn"));
    await createReplica(h.rt, OPERATOR, replica("west-1", "us-west"));
    const before = await rows();
    assert.deepEqual(before.entrypoints, { "us-ashburn": "lb-a" });
    assert.deepEqual(before.homes, { "east-1": "lb-a", "west-1": null }, "us-west has no LB yet");

    await assert.rejects(
      () => updateLb(h.rt, OPERATOR, { id: "lb-a", region: "us-west" }),
      (error: unknown) =>
        error instanceof DomainError && error.kind === "precondition" && /still serves 1 replica\(s\) \(east-1\); home them on another LB/.test(error.message),
    );
    assert.deepEqual(await rows(), before, "a refused move changes nothing");

    await updateReplica(h.rt, OPERATOR, { id: (await listReplicas(h.rt)).find((r) => r.name === "east-1")!.id, homeLbId: "lb-b" });
    await updateLb(h.rt, OPERATOR, { id: "lb-a", region: "us-west" });
    assert.deepEqual(await rows(), {
      lbs: { "lb-a": "us-west", "lb-b": "us-ashburn" },
      entrypoints: { "us-ashburn": "lb-b", "us-west": "lb-a" },
      homes: { "east-1": "lb-b", "west-1": "lb-a" },
    });
    const moved = (await listAudit(h.rt, { action: "lb.update" }))[0];
    assert.match(JSON.stringify(moved?.after), /"regionId":"us-west"/);
  });
});
