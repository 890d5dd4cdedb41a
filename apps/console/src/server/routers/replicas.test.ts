// The replicas router's capacity settings (maxConcurrency, cacheCapacityTokens): the protocol's
// bounds, a clear 400 and nothing written on bad input; set, they reach the LBs' configs.
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { TRPCError } from "@trpc/server";
import { eq } from "drizzle-orm";
import { ZodError } from "zod";
import { DomainError } from "../errors";
import { listAudit } from "../services/audit";
import { createLb } from "../services/lbs";
import { createRegion } from "../services/regions";
import { listReplicas, updateReplica } from "../services/replicas";
import { createHarness, type Harness, OPERATOR } from "../testing/harness";
import { router } from "../trpc/init";
import { replicasRouter } from "./replicas";

describe("replicas router: capacity settings", () => {
  let h: Harness;
  let replicas: ReturnType<ReturnType<typeof router<{ replicas: typeof replicasRouter }>>["createCaller"]>["replicas"];
  const row = async (id: string) => (await h.rt.store.db.select().from(h.rt.store.tables.replicas).where(eq(h.rt.store.tables.replicas.id, id)))[0];
  const lbRow = async () => (await h.rt.store.db.select().from(h.rt.store.tables.loadBalancers).where(eq(h.rt.store.tables.loadBalancers.id, "lb-us")))[0]!;
  const refusal = async (call: Promise<unknown>): Promise<string> => {
    const error = await call.then(
      () => assert.fail("accepted"),
      (e: unknown) => e,
    );
    assert.ok(error instanceof TRPCError);
    assert.equal(error.code, "BAD_REQUEST");
    return error.cause instanceof ZodError ? error.cause.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ") : error.message;
  };
  before(async () => {
    h = await createHarness();
    await createRegion(h.rt, OPERATOR, { name: "us" });
    await createLb(h.rt, OPERATOR, { name: "lb-us", url: "http://127.0.0.1:9/us", region: "us" });
    replicas = router({ replicas: replicasRouter }).createCaller({ rt: h.rt, user: { id: 1, username: OPERATOR.username, role: "operator" } }).replicas;
  });
  after(() => h.close());

  test("a URL or a model name too long for the LBs' configs is refused by name, and nothing is written", async () => {
    const base = { name: "r-long", region: "us", engine: "vllm" as const, model: "m", url: "http://127.0.0.1:9" };
    assert.match(await refusal(replicas.create({ ...base, url: `http://127.0.0.1:9/${"a".repeat(2100)}` })), /url: url must be at most 2,048 characters/);
    assert.match(await refusal(replicas.create({ ...base, model: "m".repeat(300) })), /model: model must be at most 256 characters/);
    assert.equal(await row("r-long"), undefined);
  });

  test("bad capacity values are refused by name and nothing is written", async () => {
    await replicas.create({ name: "us-1", url: "http://127.0.0.1:9", region: "us", model: "m" });
    const before = await row("us-1");
    const audits = (await listAudit(h.rt, { action: "replica.", limit: 1000 })).length;
    assert.match(await refusal(replicas.update({ id: "us-1", maxConcurrency: 0 })), /maxConcurrency/);
    assert.match(await refusal(replicas.update({ id: "us-1", cacheCapacityTokens: -1 })), /cacheCapacityTokens/);
    assert.match(await refusal(replicas.update({ id: "us-1", maxConcurrency: 2.5 })), /maxConcurrency/);
    assert.match(await refusal(replicas.update({ id: "us-1", cacheCapacityTokens: 2 ** 40 })), /cacheCapacityTokens: must be at most/);
    assert.match(await refusal(replicas.create({ name: "us-2", url: "http://127.0.0.1:9", region: "us", model: "m", maxConcurrency: -3 })), /maxConcurrency/);
    // The service holds callers without the router (the demo seed) to the same bounds.
    await assert.rejects(
      updateReplica(h.rt, OPERATOR, { id: "us-1", maxConcurrency: 0 }),
      (e: unknown) => e instanceof DomainError && /maxConcurrency/.test(e.message),
    );
    assert.deepEqual(await row("us-1"), before);
    assert.equal(await row("us-2"), undefined);
    assert.equal((await listAudit(h.rt, { action: "replica.", limit: 1000 })).length, audits);
  });

  test("set, they are stored, audited, shown and pushed as a new config version; null clears them", async () => {
    const version = (await lbRow()).configVersion;
    await replicas.update({ id: "us-1", maxConcurrency: 16, cacheCapacityTokens: 500_000 });
    const view = (await listReplicas(h.rt)).find((r) => r.id === "us-1")!;
    assert.deepEqual([view.maxConcurrency, view.cacheCapacityTokens], [16, 500_000]);
    assert.ok((await lbRow()).configVersion > version, "a new config version for its LB");
    const [audit] = await listAudit(h.rt, { action: "replica.update", limit: 1 });
    assert.match(JSON.stringify(audit?.after), /"maxConcurrency":16/);
    await replicas.update({ id: "us-1", maxConcurrency: null });
    const cleared = (await row("us-1"))!;
    assert.deepEqual([cleared.maxConcurrency, cleared.cacheCapacityTokens], [null, 500_000], "null clears one; the other stays");
    await replicas.create({ name: "us-3", url: "http://127.0.0.1:9", region: "us", model: "m", cacheCapacityTokens: 0 });
    assert.equal((await row("us-3"))?.cacheCapacityTokens, 0, "0: the engine caches nothing");
  });
});
