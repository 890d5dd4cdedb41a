// The push loop and an LB whose running config cannot be read at once (apps/console/README.md, "LB
// limits and replica capacity"): a read that fails for a passing reason holds the push, so the LB's
// own limits are adopted once it answers; an LB that has no GET /admin/config (an older build) is
// pushed the console's defaults, the log says so, and they are then stored as the console's, never
// audited as adopted from the LB.
import { strict as assert } from "node:assert";
import { after, describe, test } from "node:test";
import { eq } from "drizzle-orm";
import pino from "pino";
import { DEFAULT_LIMITS, LB_CONFIG_SCHEMA, type LbConfig, parseLbConfig } from "@meridian/protocol";
import { listAudit } from "../services/audit";
import { createLb, lbById } from "../services/lbs";
import { createRegion } from "../services/regions";
import { type FakeLb, startFakeLb } from "../testing/fake-lb";
import { createHarness, type Harness, OPERATOR, TEST_TOKEN, waitFor } from "../testing/harness";

const MiB = 1024 * 1024;

/** An LB started from its own config file with 32 MiB bodies. */
const ownConfig = (lbId: string): LbConfig => parseLbConfig({ schema: LB_CONFIG_SCHEMA, version: 0, lbId, region: "us", limits: { maxBodyBytes: 32 * MiB } });

describe("the first push to an LB whose running config is not read at once", () => {
  let h: Harness | null = null;
  let fake: FakeLb | null = null;
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  test("a 503 while the LB starts holds the push; once it answers, its own 32 MiB is adopted and pushed", async () => {
    h = await createHarness();
    await createRegion(h.rt, OPERATOR, { name: "us" });
    fake = await startFakeLb({ id: "lb-us", region: "us", token: TEST_TOKEN, running: ownConfig("lb-us") });
    fake.failConfigReads = 503;
    await createLb(h.rt, OPERATOR, { name: "lb-us", url: fake.url, region: "us" }, "lb-us");
    await h.rt.publisher.start();
    await waitFor(() => fake!.configReads >= 2 || fake!.configs.length > 0, 15_000, "the push loop to ask twice");
    assert.deepEqual(
      fake.configs.map((c) => c.limits.maxBodyBytes),
      [],
      "nothing pushed while the LB's limits could not be read",
    );
    assert.match(
      h.rt.publisher.status("lb-us").lastError ?? "",
      /not pushed yet: the limits the LB runs could not be read \(GET \/admin\/config answered 503\)/,
    );

    fake.failConfigReads = null;
    h.rt.publisher.kick("lb-us");
    await waitFor(() => fake!.version > 0 && h!.rt.publisher.status("lb-us").lastError === null, 15_000, "the push to be acknowledged");
    assert.deepEqual(
      fake.configs.map((c) => c.limits.maxBodyBytes),
      fake.configs.map(() => 32 * MiB),
    );
    assert.deepEqual((await lbById(h.rt, { id: "lb-us" })).limits.set, { maxBodyBytes: 32 * MiB });
    assert.equal((await listAudit(h.rt, { action: "lb.adopt-settings", limit: 5 })).length, 1);
  });
});

describe("the first push to an LB without GET /admin/config (an older build)", () => {
  let h: Harness | null = null;
  let fake: FakeLb | null = null;
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  test("is the console's defaults, said in the log; the next probe stores them as the console's, reading nothing more", async () => {
    const logged: { level: number; msg: string; lbId?: string }[] = [];
    const log = pino({ level: "info" }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    h = await createHarness({}, log);
    await createRegion(h.rt, OPERATOR, { name: "us" });
    fake = await startFakeLb({ id: "lb-old", region: "us", token: TEST_TOKEN }); // GET /admin/config: 404
    await createLb(h.rt, OPERATOR, { name: "lb-old", url: fake.url, region: "us" }, "lb-old");
    await h.rt.publisher.start();
    // The console's record of the acknowledgement, not the fake's version (set before its answer).
    const acked = async () =>
      (await h!.rt.store.db.select().from(h!.rt.store.tables.loadBalancers).where(eq(h!.rt.store.tables.loadBalancers.id, "lb-old")))[0]!.ackedVersion;
    await waitFor(async () => (await acked()) > 0, 15_000, "the first push to be acknowledged");
    assert.equal(fake.configs[0]?.limits.maxBodyBytes, DEFAULT_LIMITS.maxBodyBytes);
    const said = logged.filter((entry) => entry.lbId === "lb-old" && /pushing the console's defaults/.test(entry.msg));
    assert.equal(said.length, 1, JSON.stringify(logged.map((entry) => entry.msg)));
    assert.equal(said[0]?.level, 30, "at info: nothing failed");

    const readsBefore = fake.configReads;
    await h.rt.health.tick();
    await h.rt.health.tick();
    assert.equal(fake.configReads, readsBefore, "an LB running the console's config is not read again");
    assert.deepEqual((await lbById(h.rt, { id: "lb-old" })).limits, { defaults: { ...DEFAULT_LIMITS }, set: {}, stored: true });
    assert.equal((await listAudit(h.rt, { action: "lb.adopt-settings", limit: 5 })).length, 0);
    const recorded = await listAudit(h.rt, { action: "lb.limits-defaults", limit: 5 });
    assert.equal(recorded.length, 1);
    assert.match(JSON.stringify(recorded[0]?.after), /answered 404/);
  });
});
