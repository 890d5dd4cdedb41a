import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { DomainError } from "../errors";
import { createHarness, OPERATOR, TEST_TOKEN, waitFor, type Harness } from "../testing/harness";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { listAudit } from "./audit";
import { createClientKey } from "./client-keys";
import { createLb, deleteLb, entrypointMap, listLbs, setPolicy, updateLb } from "./lbs";
import { createRegion, deleteRegion, listRegions, rttMatrix, updateRegion } from "./regions";
import { createReplica, deleteReplica, listReplicas, setReplicaState, updateReplica } from "./replicas";

async function expectDomainError(fn: () => Promise<unknown>, kind: DomainError["kind"], pattern: RegExp): Promise<void> {
  await assert.rejects(fn, (error: unknown) => {
    assert.ok(error instanceof DomainError, `expected a DomainError, got ${String(error)}`);
    assert.equal(error.kind, kind);
    assert.match(error.message, pattern);
    return true;
  });
}

describe("topology services", () => {
  let h: Harness;
  let lb: FakeLb;
  before(async () => {
    h = await createHarness();
    lb = await startFakeLb({ id: "lb-us", region: "us-ashburn", token: TEST_TOKEN });
    await h.rt.start();
  });
  after(async () => {
    await h.close();
    await lb.close();
  });

  test("regions: create, duplicate name refused, rename, delete refused while in use", async () => {
    const { id } = await createRegion(h.rt, OPERATOR, { name: "us-ashburn", displayName: "Ashburn" });
    assert.equal(id, "us-ashburn");
    await expectDomainError(() => createRegion(h.rt, OPERATOR, { name: "us-ashburn" }), "conflict", /already exists/);
    await createRegion(h.rt, OPERATOR, { name: "eu-frankfurt" });
    await updateRegion(h.rt, OPERATOR, { id: "eu-frankfurt", displayName: "Frankfurt" });
    assert.deepEqual(
      (await listRegions(h.rt)).map((r) => [r.name, r.displayName]),
      [
        ["eu-frankfurt", "Frankfurt"],
        ["us-ashburn", "Ashburn"],
      ],
    );
    assert.deepEqual(await rttMatrix(h.rt), {
      regions: ["eu-frankfurt", "us-ashburn"],
      rttMs: [
        [null, null],
        [null, null],
      ],
    });
  });

  test("LBs and replicas: validation errors name the problem", async () => {
    await expectDomainError(() => createLb(h.rt, OPERATOR, { name: "x", url: "ftp://host", region: "us-ashburn" }), "invalid", /http or https/);
    await expectDomainError(() => createLb(h.rt, OPERATOR, { name: "x", url: "http://h:1", region: "mars" }), "precondition", /unknown region "mars"/);
    await createLb(h.rt, OPERATOR, { name: "lb-us", url: lb.url, region: "us-ashburn" });
    await expectDomainError(() => createLb(h.rt, OPERATOR, { name: "lb-us", url: lb.url, region: "us-ashburn" }), "conflict", /already exists/);
    await expectDomainError(
      () => createReplica(h.rt, OPERATOR, { name: "r", url: "not a url", region: "us-ashburn", engine: "sglang", model: "m", homeLbId: "lb-us" }),
      "invalid",
      /not a URL/,
    );
    await expectDomainError(
      () => createReplica(h.rt, OPERATOR, { name: "r", url: "http://127.0.0.1:9", region: "nowhere", engine: "sglang", model: "m", homeLbId: "lb-us" }),
      "precondition",
      /unknown region/,
    );
    await createReplica(h.rt, OPERATOR, { name: "r1", url: "http://127.0.0.1:9/", region: "us-ashburn", engine: "sglang", model: "m", homeLbId: "lb-us" });
    await expectDomainError(
      () => createReplica(h.rt, OPERATOR, { name: "r1", url: "http://127.0.0.1:9", region: "us-ashburn", engine: "vllm", model: "m", homeLbId: "lb-us" }),
      "conflict",
      /replica named "r1" already exists/,
    );
    await expectDomainError(() => deleteRegion(h.rt, OPERATOR, { id: "us-ashburn" }), "precondition", /still has 1 load balancer/);
    await expectDomainError(() => deleteLb(h.rt, OPERATOR, { id: "lb-us" }), "precondition", /still serves 1 replica/);
    const [replica] = await listReplicas(h.rt);
    assert.equal(replica?.url, "http://127.0.0.1:9", "trailing slash trimmed");
    assert.equal(replica?.homeLbName, "lb-us");
    // A new LB takes its region's clients once its first probe answers.
    await h.rt.health.tick();
    assert.deepEqual(
      Object.entries(await entrypointMap(h.rt)).map(([region, e]) => [region, e.lbId, e.url, e.status]),
      [["us-ashburn", "lb-us", lb.url, "assigned"]],
    );
  });

  test("the LB receives versioned configs with its replicas, policy and state changes", async () => {
    await waitFor(() => lb.configs.at(-1)?.replicas.length === 1, 5_000, "config with r1");
    const first = lb.configs.at(-1)!;
    assert.equal(first.lbId, "lb-us");
    assert.equal(first.replicas[0]?.id, "r1");
    await setReplicaState(h.rt, OPERATOR, { id: "r1", state: "draining" });
    await waitFor(() => lb.configs.at(-1)?.replicas[0]?.state === "draining", 5_000, "draining pushed");
    await setPolicy(h.rt, OPERATOR, { id: "lb-us", policy: "least-request", crossRegion: "via-peer" });
    await waitFor(() => lb.configs.at(-1)?.policy === "least-request", 5_000, "policy pushed");
    const versions = lb.configs.map((c) => c.version);
    assert.deepEqual(
      versions,
      [...versions].sort((a, b) => a - b),
      "versions increase",
    );
    assert.equal(new Set(versions).size, versions.length, "no version pushed twice");
    await waitFor(async () => (await listLbs(h.rt))[0]?.ackedVersion === lb.version, 5_000, "ack recorded");
    await updateReplica(h.rt, OPERATOR, { id: "r1", model: "m2" });
    await waitFor(() => lb.configs.at(-1)?.replicas[0]?.model === "m2", 5_000, "update pushed");
  });

  test("a 409 from the LB bumps the version past the LB's", async () => {
    lb.version += 10;
    await setPolicy(h.rt, OPERATOR, { id: "lb-us", policy: "gorgo", crossRegion: "direct" });
    await waitFor(() => lb.configs.at(-1)?.policy === "gorgo", 5_000, "bumped config accepted");
    assert.ok(lb.version > 10);
  });

  test("an LB that restarted without its config is pushed a fresh version", async () => {
    await h.rt.health.tick();
    const before = lb.version;
    lb.version = 0;
    lb.configs.length = 0;
    await h.rt.health.tick();
    await waitFor(() => lb.version > before, 5_000, "config re-pushed");
    assert.equal(lb.configs.at(-1)?.lbId, "lb-us");
  });

  test("a URL the LBs' config schema refuses is a clear 400, stored nowhere, and publishing goes on", async () => {
    // "http:/host:port" (one slash) is a URL to `new URL()`, not to the LB config schema: stored, it
    // would make every LB's config fail to build.
    const oneSlash = "http:/10.0.0.5:8000";
    const audited = async () => (await h.rt.store.db.select().from(h.rt.store.tables.auditLog)).length;
    const auditedBefore = await audited();
    await expectDomainError(
      () => createReplica(h.rt, OPERATOR, { name: "r-bad", url: oneSlash, region: "us-ashburn", engine: "sglang", model: "m", homeLbId: "lb-us" }),
      "invalid",
      /url "http:\/10\.0\.0\.5:8000" is not a URL an LB accepts; expected an http or https URL/,
    );
    await expectDomainError(() => createLb(h.rt, OPERATOR, { name: "lb-bad", url: oneSlash, region: "us-ashburn" }), "invalid", /not a URL an LB accepts/);
    await expectDomainError(() => updateLb(h.rt, OPERATOR, { id: "lb-us", adminUrl: oneSlash }), "invalid", /adminUrl "http:\/10/);
    assert.ok(!(await listReplicas(h.rt)).some((r) => r.name === "r-bad"), "no replica stored");
    assert.deepEqual(
      (await listLbs(h.rt)).map((l) => [l.id, l.adminUrl]),
      [["lb-us", null]],
      "no LB stored, none changed",
    );
    assert.equal(await audited(), auditedBefore, "nothing audited");
    await setPolicy(h.rt, OPERATOR, { id: "lb-us", policy: "least-load", crossRegion: "direct" });
    await waitFor(() => lb.configs.at(-1)?.policy === "least-load", 5_000, "the next change pushed");
  });

  test("every mutation is audited with before and after", async () => {
    await deleteReplica(h.rt, OPERATOR, { id: "r1" });
    const entries = await listAudit(h.rt, { actor: "admin" });
    const actions = entries.map((e) => e.action);
    for (const action of [
      "region.create",
      "region.update",
      "lb.create",
      "replica.create",
      "replica.drain",
      "lb.set-policy",
      "replica.update",
      "replica.delete",
    ]) {
      assert.ok(actions.includes(action), `missing audit action ${action}`);
    }
    const deletion = entries.find((e) => e.action === "replica.delete")!;
    assert.equal(deletion.target, "replica:r1");
    assert.equal((deletion.before as { name: string }).name, "r1");
    assert.equal(deletion.after, null);
    assert.ok((await h.rt.store.db.select().from(h.rt.store.tables.auditLog)).length >= 8);
    assert.equal((await listAudit(h.rt, { action: "replica.", limit: 2 })).length, 2);
  });
});

describe("observed RTTs follow their region", () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  test("a deleted region's RTTs go with it: a region renamed or created under its name starts without them", async () => {
    const { observedRtts } = h.rt.store.tables;
    for (const name of ["us", "eu", "ap"]) await createRegion(h.rt, OPERATOR, { name });
    await h.rt.store.db.insert(observedRtts).values([
      { fromRegion: "us", toRegion: "eu", rttMs: 90, updatedAt: 1 },
      { fromRegion: "eu", toRegion: "us", rttMs: 91, updatedAt: 1 },
      { fromRegion: "ap", toRegion: "eu", rttMs: 200, updatedAt: 1 },
    ]);
    await deleteRegion(h.rt, OPERATOR, { id: "us" });
    await updateRegion(h.rt, OPERATOR, { id: "ap", name: "us" });
    const rows = (await h.rt.store.db.select().from(observedRtts)).map((r) => `${r.fromRegion}->${r.toRegion}:${r.rttMs}`).sort();
    assert.deepEqual(rows, ["us->eu:200"], "only the renamed region's own RTT, under its new name");
  });

  test("a deleted region's client keys go with it, and its audit entry names them", async () => {
    await createRegion(h.rt, OPERATOR, { name: "sa" });
    const key = await createClientKey(h.rt, OPERATOR, { region: "sa", name: "mobile" });
    await deleteRegion(h.rt, OPERATOR, { id: "sa" });
    const [entry] = await listAudit(h.rt, { action: "region.delete", target: "region:sa" });
    assert.ok(entry, "the delete is audited");
    assert.deepEqual((entry.before as { clientKeys?: unknown }).clientKeys, [{ id: key.id, name: "mobile", revokedAt: null }]);
  });
});
