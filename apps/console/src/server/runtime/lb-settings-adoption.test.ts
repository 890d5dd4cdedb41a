// Adopting an LB's running settings: an LB started with its own limits (and a replica's
// maxConcurrency) keeps them when the console first pushes to it, instead of going back to the
// console's defaults; an operator's values always win, and nothing is adopted twice.
import { strict as assert } from "node:assert";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { eq, sql } from "drizzle-orm";
import pino from "pino";
import { DEFAULT_LIMITS, LB_CONFIG_SCHEMA, type LbConfig, type LbState, parseLbConfig } from "@meridian/protocol";
import { SYSTEM_HEALTH } from "../audit-trail";
import { listAudit } from "../services/audit";
import { createLb, lbById } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createReplica } from "../services/replicas";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { createHarness, type Harness, OPERATOR, TEST_TOKEN, waitFor } from "../testing/harness";
import { buildLbConfig } from "./config-builder";
import { HealthMonitor } from "./health-monitor";
import { LbHealthBook } from "./lb-health";
import { runningConfigReader, SettingsAdoption } from "./lb-settings-adoption";

const MiB = 1024 * 1024;

/** What an LB started from its own config file runs: 32 MiB bodies, us-1 capped at 7, us-2 at 9. */
function runningConfig(lbId: string): LbConfig {
  return parseLbConfig({
    schema: LB_CONFIG_SCHEMA,
    version: 0,
    lbId,
    region: "us",
    limits: { maxBodyBytes: 32 * MiB, queueMaxLength: DEFAULT_LIMITS.queueMaxLength },
    replicas: [
      { id: "us-1", url: "http://127.0.0.1:9", region: "us", model: "m", maxConcurrency: 7, cacheCapacityTokens: 100_000 },
      { id: "us-2", url: "http://127.0.0.1:9", region: "us", model: "m", maxConcurrency: 9 },
    ],
  });
}

describe("adopting the settings an LB runs", () => {
  let h: Harness;
  const reads: string[] = [];
  let answer: LbConfig | null = null;
  const adoption = () =>
    new SettingsAdoption({
      store: h.rt.store,
      log: pino({ level: "silent" }),
      actor: SYSTEM_HEALTH,
      readConfig: async (lb) => {
        reads.push(lb.id);
        return answer;
      },
    });
  const lb = async (id: string) => (await h.rt.store.db.select().from(h.rt.store.tables.loadBalancers).where(eq(h.rt.store.tables.loadBalancers.id, id)))[0]!;
  const replica = async (id: string) => (await h.rt.store.db.select().from(h.rt.store.tables.replicas).where(eq(h.rt.store.tables.replicas.id, id)))[0]!;

  before(async () => {
    h = await createHarness();
    await createRegion(h.rt, OPERATOR, { name: "us" });
    await createLb(h.rt, OPERATOR, { name: "lb-us", url: "http://127.0.0.1:9/us", region: "us" });
    await createReplica(h.rt, OPERATOR, { name: "us-1", url: "http://127.0.0.1:9", region: "us", engine: "sglang", model: "m" });
    // The operator set us-2's cap in the console: the LB's own value does not replace it.
    await createReplica(h.rt, OPERATOR, { name: "us-2", url: "http://127.0.0.1:9", region: "us", engine: "sglang", model: "m", maxConcurrency: 3 });
  });
  after(() => h.close());

  test("until the LB answers, nothing is stored and the page says the console's defaults apply", async () => {
    answer = null;
    assert.equal(await adoption().adopt(await lb("lb-us")), false);
    assert.deepEqual((await lbById(h.rt, { id: "lb-us" })).limits, { defaults: { ...DEFAULT_LIMITS }, set: {}, stored: false });
    assert.equal((await lb("lb-us")).limitsJson, null);
  });

  test("the LB's limits and a replica's capacity are adopted once, audited, and reach the next config", async () => {
    answer = runningConfig("lb-us");
    const versionBefore = (await lb("lb-us")).configVersion;
    assert.equal(await adoption().adopt(await lb("lb-us")), true);
    assert.deepEqual(
      (await lbById(h.rt, { id: "lb-us" })).limits,
      { defaults: { ...DEFAULT_LIMITS }, set: { maxBodyBytes: 32 * MiB }, stored: true },
      "only what differs from the defaults",
    );
    assert.deepEqual([(await replica("us-1")).maxConcurrency, (await replica("us-1")).cacheCapacityTokens], [7, 100_000]);
    assert.equal((await replica("us-2")).maxConcurrency, 3, "the operator's value stays");
    const [audit] = await listAudit(h.rt, { action: "lb.adopt-settings", limit: 1 });
    assert.equal(audit?.actor, SYSTEM_HEALTH.username);
    const config = (await buildLbConfig(h.rt.store, "lb-us", versionBefore + 1))!;
    assert.equal(config.limits.maxBodyBytes, 32 * MiB, "the push keeps the LB's 32 MiB");
    assert.equal(config.replicas.find((r) => r.id === "us-1")?.maxConcurrency, 7);

    reads.length = 0;
    assert.equal(await adoption().adopt(await lb("lb-us")), false, "adopted once");
    assert.deepEqual(reads, [], "an LB with stored limits is not asked again");
  });

  test("an LB registered with limits is never read: the operator's limits are pushed", async () => {
    await createLb(h.rt, OPERATOR, { name: "lb-set", url: "http://127.0.0.1:9/set", region: "us", limits: { maxBodyBytes: 16 * MiB } });
    reads.length = 0;
    answer = runningConfig("lb-set");
    assert.equal(await adoption().adopt(await lb("lb-set")), false);
    assert.deepEqual(reads, []);
    assert.equal((await buildLbConfig(h.rt.store, "lb-set", 5))!.limits.maxBodyBytes, 16 * MiB);
  });

  test("the leader adopts at the LB's state probe, before reporting its version (which wakes the push), then publishes", async () => {
    await createLb(h.rt, OPERATOR, { name: "lb-new", url: "http://127.0.0.1:9/new", region: "us" });
    const calls: string[] = [];
    const monitor = new HealthMonitor({
      acting: () => true,
      store: h.rt.store,
      log: pino({ level: "silent" }),
      lbClient: {
        health: async () => ({ ok: true, error: null }),
        state: async (endpoint) => ({ state: { lbId: endpoint.id, region: "us", configVersion: 0, replicas: [] } as unknown as LbState, error: null }),
      },
      book: new LbHealthBook(),
      publisher: {
        onReportedVersion: async (row) => void calls.push(`report:${row.id}`),
        publishAll: async () => void calls.push("publishAll"),
      },
      telemetry: { sync: async () => undefined },
      failover: { failover: async (lbId) => ({ lbId, targetLbId: lbId, movedReplicas: [], movedEntrypoints: [] }) },
      autoFailback: { observe: () => undefined, failBackIfDue: async () => undefined },
      entrypoints: { resolve: async () => [] },
      replicaWarnings: { report: () => undefined },
      intervalMs: 60_000,
      failoverAfter: 3,
      autoFailover: false,
      adoption: {
        adopt: async (row) => {
          calls.push(`adopt:${row.id}`);
          return row.id === "lb-new";
        },
      },
    });
    await monitor.tick();
    const forNew = calls.filter((c) => c.endsWith("lb-new") || c === "publishAll");
    assert.deepEqual(forNew, ["adopt:lb-new", "publishAll", "report:lb-new"]);
  });
});

describe("an operator's edit racing an adoption", () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  // SQLite runs one write transaction at a time, so an adoption cannot interleave with an edit there.
  test("on PostgreSQL, limits and a replica cap committed while the adoption waits for the row are kept", async (t) => {
    const { database } = h;
    if (database.dialect !== "pg") return t.skip("SQLite serialises write transactions");
    await createRegion(h.rt, OPERATOR, { name: "us" });
    await createLb(h.rt, OPERATOR, { name: "lb-race", url: "http://127.0.0.1:9/race", region: "us" }, "lb-race");
    await createReplica(h.rt, OPERATOR, { name: "us-1", url: "http://127.0.0.1:9", region: "us", engine: "sglang", model: "m" }, "us-1");
    const { loadBalancers, replicas } = h.rt.store.tables;
    const [row] = await h.rt.store.db.select().from(loadBalancers).where(eq(loadBalancers.id, "lb-race"));
    const adoption = new SettingsAdoption({
      store: h.rt.store,
      log: pino({ level: "silent" }),
      actor: SYSTEM_HEALTH,
      readConfig: async () => runningConfig("lb-race"),
    });

    // The operator's edit holds the rows (updated, not yet committed) while the adoption starts.
    let commit!: () => void;
    const committing = new Promise<void>((resolve) => (commit = resolve));
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    const edit = h.rt.store.transaction(async (tx) => {
      await tx.db
        .update(tx.tables.loadBalancers)
        .set({ limitsJson: JSON.stringify({ maxBodyBytes: 16 * MiB }) })
        .where(eq(tx.tables.loadBalancers.id, "lb-race"));
      await tx.db.update(tx.tables.replicas).set({ maxConcurrency: 3 }).where(eq(tx.tables.replicas.id, "us-1"));
      holding();
      await committing;
    });
    await held;
    const adopting = adoption.adopt(row!);
    const lockWaits = async () => {
      const result = (await database.db.execute(
        sql`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`,
      )) as unknown as { rows: { n: number }[] };
      return result.rows[0]!.n;
    };
    await waitFor(async () => (await lockWaits()) > 0, 10_000, "the adoption to wait for the edited row");
    commit();
    await edit;
    assert.equal(await adopting, false, "nothing adopted");
    const [lb] = await h.rt.store.db.select().from(loadBalancers).where(eq(loadBalancers.id, "lb-race"));
    const [rep] = await h.rt.store.db.select().from(replicas).where(eq(replicas.id, "us-1"));
    assert.deepEqual(
      { limits: lb!.limitsJson, maxConcurrency: rep!.maxConcurrency },
      { limits: JSON.stringify({ maxBodyBytes: 16 * MiB }), maxConcurrency: 3 },
    );
    assert.equal((await listAudit(h.rt, { action: "lb.adopt-settings", limit: 5 })).length, 0, "no adoption audited");
  });
});

describe("the first push to an LB that runs its own limits", () => {
  let h: Harness;
  let fake: FakeLb | null = null;
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  test("carries them: the push loop adopts before it pushes, whoever reaches the LB first", async () => {
    h = await createHarness();
    await createRegion(h.rt, OPERATOR, { name: "us" });
    await createReplica(h.rt, OPERATOR, { name: "us-1", url: "http://127.0.0.1:9", region: "us", engine: "sglang", model: "m" });
    fake = await startFakeLb({ id: "lb-us", region: "us", token: TEST_TOKEN, running: runningConfig("lb-us") });
    await createLb(h.rt, OPERATOR, { name: "lb-us", url: fake.url, region: "us" }, "lb-us");
    await h.rt.publisher.start();
    await waitFor(() => fake!.version > 0, 15_000, "the first push to be acknowledged");
    assert.deepEqual(
      fake.configs.map((c) => c.limits.maxBodyBytes),
      fake.configs.map(() => 32 * MiB),
      "no push carried the console's default 8 MiB",
    );
    assert.equal(fake.configs[0]?.replicas.find((r) => r.id === "us-1")?.maxConcurrency, 7);
  });
});

describe("reading the config an LB runs", () => {
  test("GET /admin/config with the LB's token; anything but a valid config is nothing to adopt", async () => {
    let status = 200;
    let seenAuth: string | undefined;
    const server = createServer((req, res) => {
      seenAuth = req.headers.authorization;
      if (req.url !== "/base/admin/config" || req.method !== "GET") {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(runningConfig("lb-us")));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const read = runningConfigReader({ auth: async () => ({ authorization: "Bearer t" }) });
      const adminBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}/base/`;
      assert.equal((await read({ id: "lb-us", adminBase }))?.limits.maxBodyBytes, 32 * MiB);
      assert.equal(seenAuth, "Bearer t");
      status = 404;
      assert.equal(await read({ id: "lb-us", adminBase }), null);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
