// The LBs router's limits and routing settings: bounds are the protocol's (LimitsSchema,
// ProbesSchema, IndexSettingsSchema, sessionKeyBlocks), a bad value is a clear 400 and nothing is
// written; a good one is stored, audited and pushed as a new config version.
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { TRPCError } from "@trpc/server";
import { eq } from "drizzle-orm";
import { ZodError } from "zod";
import type { LoadBalancerRow } from "@meridian/db";
import { DEFAULT_INDEX, DEFAULT_LIMITS, DEFAULT_PROBES, DEFAULT_SESSION_KEY_BLOCKS, type LbConfig } from "@meridian/protocol";
import { listAudit } from "../services/audit";
import { createLb, lbById } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createHarness, type Harness, OPERATOR } from "../testing/harness";
import { router } from "../trpc/init";
import { lbsRouter } from "./lbs";

/** The refusal's code and what the UI shows (the error formatter's "path: message" of each issue). */
async function refusal(call: Promise<unknown>): Promise<{ code: string; message: string }> {
  const error = await call.then(
    () => assert.fail("accepted"),
    (e: unknown) => e,
  );
  assert.ok(error instanceof TRPCError);
  const issues = error.cause instanceof ZodError ? error.cause.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ") : error.message;
  return { code: error.code, message: issues };
}

type LbsCaller = ReturnType<ReturnType<typeof router<{ lbs: typeof lbsRouter }>>["createCaller"]>["lbs"];
/** The router as an operator calls it, and an LB's row as stored. */
async function setUp(): Promise<{ h: Harness; lbs: LbsCaller; row: (id: string) => Promise<LoadBalancerRow | undefined> }> {
  const h = await createHarness();
  await createRegion(h.rt, OPERATOR, { name: "us" });
  const lbs = router({ lbs: lbsRouter }).createCaller({ rt: h.rt, user: { id: 1, username: OPERATOR.username, role: "operator" } }).lbs;
  const { loadBalancers } = h.rt.store.tables;
  return { h, lbs, row: async (id) => (await h.rt.store.db.select().from(loadBalancers).where(eq(loadBalancers.id, id)))[0] };
}

describe("lbs router: request limits", () => {
  let h: Harness;
  let lbs: LbsCaller;
  let row: (id: string) => Promise<LoadBalancerRow | undefined>;
  before(async () => {
    ({ h, lbs, row } = await setUp());
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

describe("lbs router: routing settings (probes, index, sessionKeyBlocks)", () => {
  let h: Harness;
  let lbs: LbsCaller;
  let row: (id: string) => Promise<LoadBalancerRow | undefined>;
  const latest = async (id: string) => (await lbById(h.rt, { id })).configs[0]!.config as LbConfig;
  before(async () => {
    ({ h, lbs, row } = await setUp());
  });
  after(() => h.close());

  test("an LB registered with routing settings runs them from its first push; the rest are defaults", async () => {
    await lbs.create({
      name: "lb-fast",
      url: "http://127.0.0.1:9/fast",
      region: "us",
      routingSettings: { probes: { rttIntervalMs: 1_000 }, sessionKeyBlocks: 8 },
    });
    const first = await latest("lb-fast");
    assert.deepEqual([first.probes, first.index, first.sessionKeyBlocks], [{ ...DEFAULT_PROBES, rttIntervalMs: 1_000 }, { ...DEFAULT_INDEX }, 8]);
    assert.deepEqual((await lbById(h.rt, { id: "lb-fast" })).routingSettings.set, { probes: { rttIntervalMs: 1_000 }, sessionKeyBlocks: 8 });
  });

  test("a value out of the protocol's bounds, or a field the LB does not know, is refused with its name and nothing is written", async () => {
    await lbs.create({ name: "lb-us", url: "http://127.0.0.1:9/us", region: "us" });
    const before = await row("lb-us");
    const audits = (await listAudit(h.rt, { action: "lb.", limit: 1000 })).length;
    const zero = await refusal(lbs.update({ id: "lb-us", routingSettings: { probes: { rttIntervalMs: 0 } } }));
    assert.equal(zero.code, "BAD_REQUEST");
    assert.match(zero.message, /routingSettings\.probes\.rttIntervalMs/);
    const huge = await refusal(lbs.update({ id: "lb-us", routingSettings: { index: { capacityBlocks: 2 ** 31 } } }));
    assert.match(huge.message, /routingSettings\.index\.capacityBlocks: must be at most/);
    const keys = await refusal(lbs.update({ id: "lb-us", routingSettings: { sessionKeyBlocks: 0 } }));
    assert.match(keys.message, /routingSettings\.sessionKeyBlocks/);
    const typo = await refusal(lbs.update({ id: "lb-us", routingSettings: { probes: { rttInterval: 5 } } as never }));
    assert.match(typo.message, /rttInterval/);
    const onCreate = await refusal(lbs.create({ name: "lb-bad", url: "http://127.0.0.1:9/bad", region: "us", routingSettings: { index: { ttlMs: -1 } } }));
    assert.match(onCreate.message, /routingSettings\.index\.ttlMs/);
    // The service holds a caller that skips the router (the demo seed) to the same bounds.
    await assert.rejects(
      createLb(h.rt, OPERATOR, { name: "lb-seed", url: "http://127.0.0.1:9/seed", region: "us", routingSettings: { probes: { unhealthyAfter: 0 } } }),
      /routingSettings\.probes\.unhealthyAfter/,
    );
    assert.deepEqual(await row("lb-us"), before, "the LB's row is as it was");
    assert.equal(await row("lb-bad"), undefined, "no LB was created");
    assert.equal(await row("lb-seed"), undefined);
    assert.equal((await listAudit(h.rt, { action: "lb.", limit: 1000 })).length, audits, "nothing audited");
  });

  test("a good value is stored and pushed; editing the limits leaves it; {} puts every one back to its default", async () => {
    await lbs.update({ id: "lb-us", routingSettings: { index: { capacityBlocks: 2_000_000 } } });
    assert.equal((await latest("lb-us")).index.capacityBlocks, 2_000_000);
    await lbs.update({ id: "lb-us", limits: { queueMaxLength: 512 } });
    assert.equal((await latest("lb-us")).index.capacityBlocks, 2_000_000, "the limits editor sends only the limits");
    await lbs.update({ id: "lb-us", routingSettings: {} });
    const config = await latest("lb-us");
    assert.deepEqual([config.probes, config.index, config.sessionKeyBlocks], [{ ...DEFAULT_PROBES }, { ...DEFAULT_INDEX }, DEFAULT_SESSION_KEY_BLOCKS]);
    assert.equal(config.limits.queueMaxLength, 512);
    assert.deepEqual((await lbById(h.rt, { id: "lb-us" })).routingSettings.set, {});
  });
});
