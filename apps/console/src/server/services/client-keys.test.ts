// Client API keys at the console (issue 13 item 15): shown once and stored hashed, pushed (hashes
// only) to the LBs serving the key's region, including a failover target, revocable at once,
// audited, and accepted by /api/entrypoints while active.
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { eq } from "drizzle-orm";
import { clientKeys, entrypoints } from "@meridian/db";
import { sha256Hex } from "@meridian/protocol/credentials";
import { requireTokenOrSession } from "../auth/api-access";
import { DomainError } from "../errors";
import { buildLbConfig } from "../runtime/config-builder";
import { createHarness, ENTRYPOINTS_TOKEN, OPERATOR, type Harness } from "../testing/harness";
import { listAudit } from "./audit";
import { createClientKey, listClientKeys, revokeClientKey, setClientKeysRequired } from "./client-keys";
import { createLb } from "./lbs";
import { createRegion } from "./regions";

function expectDomainError(run: () => unknown, kind: DomainError["kind"], message: RegExp): void {
  assert.throws(run, (error: unknown) => error instanceof DomainError && error.kind === kind && message.test(error.message));
}

const entrypointsWith = (h: Harness, bearer: string) =>
  requireTokenOrSession(h.rt, new Request("http://console.test/api/entrypoints", { headers: { authorization: `Bearer ${bearer}` } }));

describe("client API keys", () => {
  let h: Harness;
  before(() => {
    h = createHarness();
    for (const region of ["us", "eu"]) {
      createRegion(h.rt, OPERATOR, { name: region });
      createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: `http://127.0.0.1:1/${region}`, region }, `lb-${region}`);
    }
  });
  after(() => h.close());

  test("a key is shown once and stored as its SHA-256; the region's LBs get the hash", () => {
    const created = createClientKey(h.rt, OPERATOR, { region: "us", name: "team-a" });
    assert.match(created.key, /^mk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    assert.ok(created.key.startsWith(`mk_${created.id}_`));
    const row = h.rt.db.select().from(clientKeys).where(eq(clientKeys.id, created.id)).get()!;
    assert.equal(row.sha256, sha256Hex(created.key));
    assert.ok(!JSON.stringify(row).includes(created.key.slice(16)), "the secret is stored nowhere");
    assert.ok(!JSON.stringify(listClientKeys(h.rt)).includes(row.sha256), "the listing shows ids and names, not even the hash");
    assert.deepEqual(buildLbConfig(h.rt.db, "lb-us", 1)?.clientAuth, {
      required: false,
      keys: [{ id: created.id, name: "team-a", region: "us", sha256: row.sha256 }],
    });
    assert.deepEqual(buildLbConfig(h.rt.db, "lb-eu", 1)?.clientAuth.keys, [], "another region's LB does not accept it");
    expectDomainError(() => createClientKey(h.rt, OPERATOR, { region: "us", name: "team-a" }), "conflict", /already has an active key named "team-a"/);
    expectDomainError(() => createClientKey(h.rt, OPERATOR, { region: "mars", name: "x" }), "precondition", /unknown region "mars"/);
  });

  test("requiring keys needs a key; the LB's config says so", () => {
    expectDomainError(() => setClientKeysRequired(h.rt, OPERATOR, { region: "eu", required: true }), "precondition", /no active client key/);
    setClientKeysRequired(h.rt, OPERATOR, { region: "us", required: true });
    assert.equal(buildLbConfig(h.rt.db, "lb-us", 2)?.clientAuth.required, true);
    assert.equal(buildLbConfig(h.rt.db, "lb-eu", 2)?.clientAuth.required, false);
    assert.deepEqual(
      listClientKeys(h.rt).regions.map((r) => [r.name, r.required, r.activeKeys]),
      [
        ["eu", false, 0],
        ["us", true, 1],
      ],
    );
  });

  test("an LB that took over a region's entrypoint accepts that region's keys", () => {
    h.rt.db.update(entrypoints).set({ lbId: "lb-eu" }).where(eq(entrypoints.regionId, "us")).run();
    try {
      const config = buildLbConfig(h.rt.db, "lb-eu", 3)!;
      assert.deepEqual(
        config.clientAuth.keys.map((k) => [k.name, k.region]),
        [["team-a", "us"]],
      );
      assert.equal(config.clientAuth.required, false, "lb-eu's own region does not require keys");
    } finally {
      h.rt.db.update(entrypoints).set({ lbId: "lb-us" }).where(eq(entrypoints.regionId, "us")).run();
    }
  });

  test("/api/entrypoints takes an active key or the machine token; a revoked key is refused everywhere", () => {
    const created = createClientKey(h.rt, OPERATOR, { region: "us", name: "replay" });
    assert.equal(entrypointsWith(h, created.key), null);
    assert.equal(entrypointsWith(h, ENTRYPOINTS_TOKEN), null);
    assert.equal(entrypointsWith(h, `${created.key.slice(0, -1)}x`)?.status, 401);
    revokeClientKey(h.rt, OPERATOR, { id: created.id });
    assert.equal(entrypointsWith(h, created.key)?.status, 401);
    assert.ok(!buildLbConfig(h.rt.db, "lb-us", 4)!.clientAuth.keys.some((k) => k.id === created.id));
    expectDomainError(() => revokeClientKey(h.rt, OPERATOR, { id: created.id }), "precondition", /already revoked/);
    expectDomainError(() => revokeClientKey(h.rt, OPERATOR, { id: "ffffffffffff" }), "not-found", /does not exist/);
    const listed = listClientKeys(h.rt).keys.find((k) => k.id === created.id)!;
    assert.equal(listed.revokedBy, "admin");
    assert.ok(listed.revokedAt !== null);
    const audit = listAudit(h.rt, { action: "client-key", limit: 20 }).map((row) => `${row.action} ${row.target}`);
    assert.ok(audit.includes(`client-key.create client-key:${created.id}`));
    assert.ok(audit.includes(`client-key.revoke client-key:${created.id}`));
    assert.ok(!JSON.stringify(listAudit(h.rt, { limit: 100 })).includes(created.key), "no key in the audit log");
  });
});
