// Adopting an LB's running settings: an LB started with its own limits, probes, index settings and
// sessionKeyBlocks (and a replica's maxConcurrency) keeps them when the console first pushes to it, instead of going back to the
// console's defaults; an operator's values always win, and nothing is adopted twice.
import { strict as assert } from "node:assert";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { eq, sql } from "drizzle-orm";
import pino from "pino";
import {
  DEFAULT_INDEX,
  DEFAULT_LIMITS,
  DEFAULT_PROBES,
  DEFAULT_SESSION_KEY_BLOCKS,
  LB_CONFIG_SCHEMA,
  type LbConfig,
  type LbState,
  parseLbConfig,
} from "@meridian/protocol";
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
import { type RunningConfig, runningConfigReader, SettingsAdoption } from "./lb-settings-adoption";

const MiB = 1024 * 1024;

/** Its probes, index settings and sessionKeyBlocks, as the console stores them: what differs from the defaults. */
const RUNNING_ROUTING = { probes: { rttIntervalMs: 2_000 }, index: { capacityBlocks: 500_000 }, sessionKeyBlocks: 8 };
const DEFAULT_ROUTING = { probes: { ...DEFAULT_PROBES }, index: { ...DEFAULT_INDEX }, sessionKeyBlocks: DEFAULT_SESSION_KEY_BLOCKS };

/** What an LB started from its own config file runs: 32 MiB bodies, RTT probes every 2 s, a
 * 500k-block index, 8-block session keys; us-1 capped at 7, us-2 at 9. */
function runningConfig(lbId: string): LbConfig {
  return parseLbConfig({
    schema: LB_CONFIG_SCHEMA,
    version: 0,
    lbId,
    region: "us",
    limits: { maxBodyBytes: 32 * MiB, queueMaxLength: DEFAULT_LIMITS.queueMaxLength },
    probes: { rttIntervalMs: 2_000, unhealthyAfter: DEFAULT_PROBES.unhealthyAfter },
    index: { capacityBlocks: 500_000 },
    sessionKeyBlocks: 8,
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
        return answer ? { kind: "config", config: answer } : { kind: "unavailable", reason: "connect ECONNREFUSED" };
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

  test("until the LB answers, nothing is stored, the push waits, and the page says the console's defaults apply", async () => {
    answer = null;
    assert.equal(await adoption().adopt(await lb("lb-us")), false);
    assert.deepEqual(await adoption().beforePush(await lb("lb-us")), { kind: "wait", reason: "connect ECONNREFUSED" });
    assert.deepEqual((await lbById(h.rt, { id: "lb-us" })).limits, { defaults: { ...DEFAULT_LIMITS }, set: {}, stored: false });
    assert.equal((await lb("lb-us")).limitsJson, null);
    assert.deepEqual((await lbById(h.rt, { id: "lb-us" })).routingSettings, { defaults: DEFAULT_ROUTING, set: {}, stored: false });
  });

  test("the LB's limits, routing settings and a replica's capacity are adopted once, audited, and reach the next config", async () => {
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
    assert.deepEqual(
      (await lbById(h.rt, { id: "lb-us" })).routingSettings,
      { defaults: DEFAULT_ROUTING, set: RUNNING_ROUTING, stored: true },
      "probes, index and sessionKeyBlocks: only what differs from the defaults",
    );
    const [audit] = await listAudit(h.rt, { action: "lb.adopt-settings", limit: 1 });
    assert.equal(audit?.actor, SYSTEM_HEALTH.username);
    assert.deepEqual(
      (audit?.after as { routingSettings?: unknown } | undefined)?.routingSettings,
      RUNNING_ROUTING,
      "the trail says which routing settings came from the LB",
    );
    const config = (await buildLbConfig(h.rt.store, "lb-us", versionBefore + 1))!;
    assert.equal(config.limits.maxBodyBytes, 32 * MiB, "the push keeps the LB's 32 MiB");
    assert.deepEqual(
      [config.probes, config.index, config.sessionKeyBlocks],
      [{ ...DEFAULT_PROBES, rttIntervalMs: 2_000 }, { ...DEFAULT_INDEX, capacityBlocks: 500_000 }, 8],
      "and its probes, index and session key length",
    );
    assert.equal(config.replicas.find((r) => r.id === "us-1")?.maxConcurrency, 7);

    reads.length = 0;
    assert.equal(await adoption().adopt(await lb("lb-us")), false, "adopted once");
    assert.deepEqual(reads, [], "an LB with stored limits is not asked again");
  });

  test("routing settings an operator set first are kept; the LB's limits are still adopted", async () => {
    await createLb(h.rt, OPERATOR, { name: "lb-routed", url: "http://127.0.0.1:9/routed", region: "us", routingSettings: { sessionKeyBlocks: 32 } });
    answer = runningConfig("lb-routed");
    assert.equal(await adoption().adopt(await lb("lb-routed")), true);
    const view = await lbById(h.rt, { id: "lb-routed" });
    assert.deepEqual(view.limits.set, { maxBodyBytes: 32 * MiB });
    assert.deepEqual(view.routingSettings.set, { sessionKeyBlocks: 32 }, "the operator's, not the LB's 8 and its probes");
    const config = (await buildLbConfig(h.rt.store, "lb-routed", 9))!;
    assert.deepEqual([config.sessionKeyBlocks, config.probes, config.index], [32, { ...DEFAULT_PROBES }, { ...DEFAULT_INDEX }]);
    const [audit] = await listAudit(h.rt, { action: "lb.adopt-settings", limit: 1 });
    assert.equal(audit?.target, "lb:lb-routed");
    assert.equal((audit?.after as { routingSettings?: unknown } | undefined)?.routingSettings, undefined, "nothing of the LB's routing settings adopted");
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
      readConfig: async () => ({ kind: "config", config: runningConfig("lb-race") }),
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
    assert.deepEqual(
      fake.configs.map((c) => [c.probes.rttIntervalMs, c.index.capacityBlocks, c.sessionKeyBlocks]),
      fake.configs.map(() => [2_000, 500_000, 8]),
      "no push carried the default probes, index or session key length",
    );
  });
});

describe("reading the config an LB runs", () => {
  test("GET /admin/config with the LB's token: a config, no config to be had (an older build), or not readable yet", async () => {
    let answer: { status: number; body?: string } | "hang" = { status: 200 };
    let seenAuth: string | undefined;
    const hanging: (() => void)[] = [];
    const server = createServer((req, res) => {
      seenAuth = req.headers.authorization;
      if (req.url !== "/base/admin/config" || req.method !== "GET") {
        res.writeHead(404).end();
        return;
      }
      if (answer === "hang") {
        hanging.push(() => res.destroy());
        return;
      }
      res.writeHead(answer.status, { "content-type": "application/json" }).end(answer.body ?? JSON.stringify(runningConfig("lb-us")));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const answered: number[] = [];
      const read = runningConfigReader(
        { auth: async () => ({ authorization: "Bearer t" }), answered: (_lb, status) => void answered.push(status) },
        { timeoutMs: 300 },
      );
      const adminBase = `http://127.0.0.1:${port}/base/`;
      const kindOf = async () => {
        const running = await read({ id: "lb-us", adminBase });
        return running.kind === "config" ? running.config.limits.maxBodyBytes : running.kind;
      };
      assert.equal(await kindOf(), 32 * MiB);
      assert.equal(seenAuth, "Bearer t");
      // Asking again changes nothing: the console pushes its defaults.
      for (const status of [404, 405]) {
        answer = { status };
        assert.equal(await kindOf(), "none", String(status));
      }
      answer = { status: 200, body: "<html>not an admin API</html>" };
      assert.equal(await kindOf(), "none");
      answer = { status: 200, body: JSON.stringify({ limits: {} }) };
      assert.equal(await kindOf(), "none");
      // Passing: the push waits for a read.
      for (const status of [500, 503, 401]) {
        answer = { status };
        assert.equal(await kindOf(), "unavailable", String(status));
      }
      // Every answer goes to the client, which drops its proof of the LB on a 401.
      assert.deepEqual(answered, [200, 404, 405, 200, 200, 500, 503, 401]);
      answer = "hang";
      assert.equal(await kindOf(), "unavailable", "a timeout");
      const closedPort = await new Promise<number>((resolve) => {
        const probe = createServer();
        probe.listen(0, "127.0.0.1", () => {
          const free = (probe.address() as AddressInfo).port;
          probe.close(() => resolve(free));
        });
      });
      assert.equal((await read({ id: "lb-us", adminBase: `http://127.0.0.1:${closedPort}` })).kind, "unavailable", "unreachable");
      const noToken = runningConfigReader({
        auth: async () => {
          throw new Error("the console could not read the LB's token");
        },
        answered: () => undefined,
      });
      assert.equal((await noToken({ id: "lb-us", adminBase })).kind, "unavailable");
    } finally {
      for (const end of hanging) end();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("an LB that already runs a console config", () => {
  let h: Harness;
  const reads: string[] = [];
  let reader: () => Promise<RunningConfig> = async () => ({ kind: "unavailable", reason: "unused" });
  let adoption: SettingsAdoption;
  const row = async (id: string) => (await h.rt.store.db.select().from(h.rt.store.tables.loadBalancers).where(eq(h.rt.store.tables.loadBalancers.id, id)))[0]!;
  const acknowledge = (id: string, version: number) =>
    h.rt.store.db
      .update(h.rt.store.tables.loadBalancers)
      .set({ configVersion: version, ackedVersion: version })
      .where(eq(h.rt.store.tables.loadBalancers.id, id));

  before(async () => {
    h = await createHarness();
    await createRegion(h.rt, OPERATOR, { name: "us" });
    adoption = new SettingsAdoption({
      store: h.rt.store,
      log: pino({ level: "silent" }),
      actor: SYSTEM_HEALTH,
      readConfig: async (lb) => {
        reads.push(lb.id);
        return await reader();
      },
    });
  });
  after(() => h.close());

  test("registered before adoption existed (acknowledged, no limits stored): the defaults are stored once, never read, not called adopted", async () => {
    await createLb(h.rt, OPERATOR, { name: "lb-old", url: "http://127.0.0.1:9/old", region: "us" }, "lb-old");
    await acknowledge("lb-old", 5);
    assert.equal(await adoption.adopt(await row("lb-old")), false, "nothing to publish: the config the console builds is unchanged");
    assert.deepEqual((await lbById(h.rt, { id: "lb-old" })).limits, { defaults: { ...DEFAULT_LIMITS }, set: {}, stored: true });
    assert.deepEqual((await lbById(h.rt, { id: "lb-old" })).routingSettings, { defaults: DEFAULT_ROUTING, set: {}, stored: true });
    assert.deepEqual(reads, []);
    const [audit] = await listAudit(h.rt, { action: "lb.limits-defaults", limit: 5 });
    assert.equal(audit?.target, "lb:lb-old");
    assert.deepEqual((audit?.after as { routingSettings?: unknown } | undefined)?.routingSettings, {}, "its routing settings too are the console's defaults");
    assert.match(JSON.stringify(audit?.after), /acknowledged version 5/);
    assert.equal(await adoption.adopt(await row("lb-old")), false);
    assert.deepEqual(await adoption.beforePush(await row("lb-old")), { kind: "stored" });
    assert.deepEqual(reads, [], "no read, ever");
    assert.equal((await listAudit(h.rt, { action: "lb.limits-defaults", limit: 5 })).length, 1, "recorded once");
    assert.equal((await listAudit(h.rt, { action: "lb.adopt-settings", limit: 5 })).length, 0);
  });

  test("pushed the defaults because it had no GET /admin/config: what it answers later is the console's config, not adopted", async () => {
    await createLb(h.rt, OPERATOR, { name: "lb-us", url: "http://127.0.0.1:9/us", region: "us" }, "lb-us");
    reader = async () => ({ kind: "none", reason: "GET /admin/config answered 404 (an LB build without it)" });
    assert.deepEqual(await adoption.beforePush(await row("lb-us")), {
      kind: "push-defaults",
      reason: "GET /admin/config answered 404 (an LB build without it)",
    });
    const pushed = (await buildLbConfig(h.rt.store, "lb-us", 1))!;
    assert.equal(pushed.limits.maxBodyBytes, DEFAULT_LIMITS.maxBodyBytes);
    // The LB acknowledges the push, and (upgraded) would now answer the config the console pushed.
    await acknowledge("lb-us", 1);
    reader = async () => ({ kind: "config", config: pushed });
    reads.length = 0;
    assert.equal(await adoption.adopt(await row("lb-us")), false);
    assert.deepEqual(reads, []);
    assert.equal((await listAudit(h.rt, { action: "lb.adopt-settings", limit: 5 })).length, 0, "the pushed defaults are not audited as the LB's");
    const [audit] = await listAudit(h.rt, { action: "lb.limits-defaults", limit: 1 });
    assert.equal(audit?.target, "lb:lb-us");
    assert.match(JSON.stringify(audit?.after), /answered 404/, "the trail says why the LB's own limits were not adopted");
  });
});
