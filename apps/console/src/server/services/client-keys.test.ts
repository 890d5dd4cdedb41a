// Client API keys at the console (issue 13 item 15): shown once and stored hashed, pushed (hashes
// only) to the LBs serving the key's region, including a failover target, revocable at once,
// audited, and accepted by /api/entrypoints while active.
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { eq, isNull } from "drizzle-orm";
import { MAX_CLIENT_KEYS_PER_CONFIG } from "@meridian/protocol";
import { sha256Hex } from "@meridian/protocol/credentials";
import { requireTokenOrSession } from "../auth/api-access";
import { DomainError } from "../errors";
import { buildLbConfig } from "../runtime/config-builder";
import { createHarness, ENTRYPOINTS_TOKEN, OPERATOR, type Harness } from "../testing/harness";
import { listAudit } from "./audit";
import { createClientKey, listClientKeys, revokeClientKey, setClientKeysRequired } from "./client-keys";
import { createLb } from "./lbs";
import { createRegion } from "./regions";

async function expectDomainError(run: () => Promise<unknown>, kind: DomainError["kind"], message: RegExp): Promise<void> {
  await assert.rejects(run, (error: unknown) => error instanceof DomainError && error.kind === kind && message.test(error.message));
}

const entrypointsWith = (h: Harness, bearer: string) =>
  requireTokenOrSession(h.rt, new Request("http://console.test/api/entrypoints", { headers: { authorization: `Bearer ${bearer}` } }));

describe("client API keys", () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
    for (const region of ["us", "eu"]) {
      await createRegion(h.rt, OPERATOR, { name: region });
      await createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: `http://127.0.0.1:1/${region}`, region }, `lb-${region}`);
    }
  });
  after(() => h.close());

  test("a key is shown once and stored as its SHA-256; the region's LBs get the hash", async () => {
    const { db, tables } = h.rt.store;
    const created = await createClientKey(h.rt, OPERATOR, { region: "us", name: "team-a" });
    assert.match(created.key, /^mk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    assert.ok(created.key.startsWith(`mk_${created.id}_`));
    const [row] = await db.select().from(tables.clientKeys).where(eq(tables.clientKeys.id, created.id));
    assert.ok(row);
    assert.equal(row.sha256, sha256Hex(created.key));
    assert.ok(!JSON.stringify(row).includes(created.key.slice(16)), "the secret is stored nowhere");
    assert.ok(!JSON.stringify(await listClientKeys(h.rt)).includes(row.sha256), "the listing shows ids and names, not even the hash");
    assert.deepEqual((await buildLbConfig(h.rt.store, "lb-us", 1))?.clientAuth, {
      required: false,
      keys: [{ id: created.id, name: "team-a", region: "us", sha256: row.sha256 }],
    });
    assert.deepEqual((await buildLbConfig(h.rt.store, "lb-eu", 1))?.clientAuth.keys, [], "another region's LB does not accept it");
    await expectDomainError(() => createClientKey(h.rt, OPERATOR, { region: "us", name: "team-a" }), "conflict", /already has an active key named "team-a"/);
    await expectDomainError(() => createClientKey(h.rt, OPERATOR, { region: "mars", name: "x" }), "precondition", /unknown region "mars"/);
  });

  test("requiring keys needs a key; the LB's config says so", async () => {
    await expectDomainError(() => setClientKeysRequired(h.rt, OPERATOR, { region: "eu", required: true }), "precondition", /no active client key/);
    await setClientKeysRequired(h.rt, OPERATOR, { region: "us", required: true });
    assert.equal((await buildLbConfig(h.rt.store, "lb-us", 2))?.clientAuth.required, true);
    assert.equal((await buildLbConfig(h.rt.store, "lb-eu", 2))?.clientAuth.required, false);
    assert.deepEqual(
      (await listClientKeys(h.rt)).regions.map((r) => [r.name, r.required, r.activeKeys]),
      [
        ["eu", false, 0],
        ["us", true, 1],
      ],
    );
  });

  test("an LB that took over a region's entrypoint accepts that region's keys", async () => {
    const { db, tables } = h.rt.store;
    const { entrypoints } = tables;
    await db.update(entrypoints).set({ lbId: "lb-eu" }).where(eq(entrypoints.regionId, "us"));
    try {
      const config = (await buildLbConfig(h.rt.store, "lb-eu", 3))!;
      assert.deepEqual(
        config.clientAuth.keys.map((k) => [k.name, k.region]),
        [["team-a", "us"]],
      );
      assert.equal(config.clientAuth.required, false, "lb-eu's own region does not require keys");
    } finally {
      await db.update(entrypoints).set({ lbId: "lb-us" }).where(eq(entrypoints.regionId, "us"));
    }
  });

  test("/api/entrypoints takes an active key or the machine token; a revoked key is refused everywhere", async () => {
    const created = await createClientKey(h.rt, OPERATOR, { region: "us", name: "replay" });
    assert.equal(await entrypointsWith(h, created.key), null);
    assert.equal(await entrypointsWith(h, ENTRYPOINTS_TOKEN), null);
    assert.equal((await entrypointsWith(h, `${created.key.slice(0, -1)}x`))?.status, 401);
    await revokeClientKey(h.rt, OPERATOR, { id: created.id });
    assert.equal((await entrypointsWith(h, created.key))?.status, 401);
    assert.ok(!(await buildLbConfig(h.rt.store, "lb-us", 4))!.clientAuth.keys.some((k) => k.id === created.id));
    await expectDomainError(() => revokeClientKey(h.rt, OPERATOR, { id: created.id }), "precondition", /already revoked/);
    await expectDomainError(() => revokeClientKey(h.rt, OPERATOR, { id: "ffffffffffff" }), "not-found", /does not exist/);
    const listed = (await listClientKeys(h.rt)).keys.find((k) => k.id === created.id)!;
    assert.equal(listed.revokedBy, "admin");
    assert.ok(listed.revokedAt !== null);
    const audit = (await listAudit(h.rt, { action: "client-key", limit: 20 })).map((row) => `${row.action} ${row.target}`);
    assert.ok(audit.includes(`client-key.create client-key:${created.id}`));
    assert.ok(audit.includes(`client-key.revoke client-key:${created.id}`));
    assert.ok(!JSON.stringify(await listAudit(h.rt, { limit: 100 })).includes(created.key), "no key in the audit log");
  });

  test("the fleet's active keys stay within what one LB's config carries (an LB standing in for every region)", async () => {
    const { clientKeys } = h.rt.store.tables;
    const existing = (await h.rt.store.db.select({ id: clientKeys.id }).from(clientKeys).where(isNull(clientKeys.revokedAt))).length;
    const regions = Math.ceil((MAX_CLIENT_KEYS_PER_CONFIG - existing) / 200);
    for (let r = 0; r < regions; r++) {
      await createRegion(h.rt, OPERATOR, { name: `bulk-${r}` });
      const rows = Array.from({ length: Math.min(200, MAX_CLIENT_KEYS_PER_CONFIG - existing - r * 200) }, (_, i) => ({
        id: `b${r}k${String(i).padStart(4, "0")}`.padEnd(12, "0"),
        regionId: `bulk-${r}`,
        name: `k${i}`,
        sha256: sha256Hex(`bulk-${r}-${i}`),
        createdAt: 1,
        createdBy: "test",
      }));
      await h.rt.store.db.insert(clientKeys).values(rows);
    }
    await createRegion(h.rt, OPERATOR, { name: "one-more" });
    await expectDomainError(() => createClientKey(h.rt, OPERATOR, { region: "one-more", name: "k" }), "busy", /the most one LB's config can carry/);
  });
});
