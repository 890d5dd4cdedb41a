// The LBs router's limits: bounds are the protocol's (LimitsSchema), a bad value is a clear 400 and
// nothing is written; a good one is stored, audited and pushed as a new config version.
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { TRPCError } from "@trpc/server";
import { eq } from "drizzle-orm";
import { ZodError } from "zod";
import { DEFAULT_LIMITS } from "@meridian/protocol";
import { listAudit } from "../services/audit";
import { lbById } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createHarness, type Harness, OPERATOR } from "../testing/harness";
import { router } from "../trpc/init";
import { lbsRouter } from "./lbs";

describe("lbs router: request limits", () => {
  let h: Harness;
  let lbs: ReturnType<ReturnType<typeof router<{ lbs: typeof lbsRouter }>>["createCaller"]>["lbs"];
  const row = async (id: string) => (await h.rt.store.db.select().from(h.rt.store.tables.loadBalancers).where(eq(h.rt.store.tables.loadBalancers.id, id)))[0];
  /** The refusal's code and what the UI shows (the error formatter's "path: message" of each issue). */
  const refusal = async (call: Promise<unknown>): Promise<{ code: string; message: string }> => {
    const error = await call.then(
      () => assert.fail("accepted"),
      (e: unknown) => e,
    );
    assert.ok(error instanceof TRPCError);
    const issues = error.cause instanceof ZodError ? error.cause.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ") : error.message;
    return { code: error.code, message: issues };
  };
  before(async () => {
    h = await createHarness();
    await createRegion(h.rt, OPERATOR, { name: "us" });
    lbs = router({ lbs: lbsRouter }).createCaller({ rt: h.rt, user: { id: 1, username: OPERATOR.username, role: "operator" } }).lbs;
  });
  after(() => h.close());

  test("an LB registered with limits runs them from its first push; the page shows which are set", async () => {
    await lbs.create({ name: "lb-big", url: "http://127.0.0.1:9/big", region: "us", limits: { maxBodyBytes: 32 * 1024 * 1024 } });
    const stored = await row("lb-big");
    assert.equal(stored?.configVersion, 1);
    const first = (await lbById(h.rt, { id: "lb-big" })).configs[0]?.config as { limits: Record<string, number> };
    assert.equal(first.limits.maxBodyBytes, 32 * 1024 * 1024, "the first config version carries the LB's limit");
    assert.equal(first.limits.queueMaxLength, DEFAULT_LIMITS.queueMaxLength);
    assert.deepEqual((await lbById(h.rt, { id: "lb-big" })).limits, { defaults: { ...DEFAULT_LIMITS }, set: { maxBodyBytes: 32 * 1024 * 1024 }, stored: true });
  });

  test("a limit out of the protocol's bounds, or one the LB does not know, is refused with its name and nothing is written", async () => {
    await lbs.create({ name: "lb-us", url: "http://127.0.0.1:9/us", region: "us" });
    const before = await row("lb-us");
    const audits = (await listAudit(h.rt, { action: "lb.", limit: 1000 })).length;
    const negative = await refusal(lbs.update({ id: "lb-us", limits: { maxBodyBytes: -1 } }));
    assert.equal(negative.code, "BAD_REQUEST");
    assert.match(negative.message, /limits\.maxBodyBytes/);
    const tooLong = await refusal(lbs.update({ id: "lb-us", limits: { queueMaxWaitMs: 2 ** 40 } }));
    assert.match(tooLong.message, /limits\.queueMaxWaitMs/);
    const typo = await refusal(lbs.update({ id: "lb-us", limits: { maxBodyByte: 5 } as never }));
    assert.match(typo.message, /maxBodyByte/);
    const onCreate = await refusal(lbs.create({ name: "lb-bad", url: "http://127.0.0.1:9/bad", region: "us", limits: { maxJsonDepth: 0 } }));
    assert.match(onCreate.message, /limits\.maxJsonDepth/);
    assert.deepEqual(await row("lb-us"), before, "the LB's row is as it was");
    assert.equal(await row("lb-bad"), undefined, "no LB was created");
    assert.equal((await listAudit(h.rt, { action: "lb.", limit: 1000 })).length, audits, "nothing audited");
  });

  test("a good limit is stored, audited and pushed as a new config version; {} puts every limit back to its default", async () => {
    const before = (await row("lb-us"))!;
    await lbs.update({ id: "lb-us", limits: { queueMaxLength: 1024 } });
    const after = (await row("lb-us"))!;
    assert.ok(after.configVersion > before.configVersion, "a new config version");
    const [audit] = await listAudit(h.rt, { action: "lb.update", limit: 1 });
    assert.equal(audit?.target, "lb:lb-us");
    assert.match(JSON.stringify(audit?.after), /queueMaxLength/);
    const latestLimits = async () => ((await lbById(h.rt, { id: "lb-us" })).configs[0]!.config as { limits: { queueMaxLength: number } }).limits;
    assert.equal((await latestLimits()).queueMaxLength, 1024);
    await lbs.update({ id: "lb-us", limits: {} });
    assert.deepEqual((await lbById(h.rt, { id: "lb-us" })).limits, { defaults: { ...DEFAULT_LIMITS }, set: {}, stored: true });
    assert.equal((await latestLimits()).queueMaxLength, DEFAULT_LIMITS.queueMaxLength);
  });
});
