// Issue 15 item 10: config pushes to an LB that is still starting are retried quietly (debug), and
// only an LB that had answered and then stopped answering is worth a warning.
import { strict as assert } from "node:assert";
import { after, describe, test } from "node:test";
import { desc, eq } from "drizzle-orm";
import { DrizzleQueryError } from "drizzle-orm/errors";
import type { LbConfig } from "@meridian/protocol";
import { freePort } from "../testing/free-port";
import { createHarness, OPERATOR, TEST_TOKEN, waitFor, type Harness } from "../testing/harness";
import { loggedLines } from "../testing/log-lines";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";
import { createLb, deleteLb, setPolicy } from "../services/lbs";
import { createRegion } from "../services/regions";
import { createReplica } from "../services/replicas";
import { ConfigPublisher } from "./config-publisher";
import { LbAdminClient } from "./lb-admin-client";
import { LbProofBook } from "./lb-proofs";
import { presentableToken } from "./lb-token-rows";
import { ConsoleRuntime } from "./runtime";

describe("config pushes while an LB starts", () => {
  let h: Harness;
  let lb: FakeLb | null = null;
  const { log, lines } = loggedLines("debug");
  after(async () => {
    await h.close();
    await lb?.close();
  });

  test("retries at debug until the LB first answers, warns once an LB that answered goes away", async () => {
    const port = await freePort();
    h = await createHarness({}, log);
    await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
    await createLb(h.rt, OPERATOR, { name: "lb-us", url: `http://127.0.0.1:${port}`, region: "us-ashburn" }, "lb-us");
    await h.rt.publisher.start();
    await waitFor(() => lines.some((l) => l.lbId === "lb-us" && /not answering yet/.test(l.msg)), 5_000, "a retried push");
    assert.deepEqual(
      lines.filter((l) => l.level >= 40).map((l) => l.msg),
      [],
      "nothing at warn or above while the LB starts",
    );
    assert.equal(lines.find((l) => /not answering yet/.test(l.msg))?.level, 20, "debug");

    lb = await startFakeLb({ id: "lb-us", region: "us-ashburn", token: TEST_TOKEN, port });
    h.rt.publisher.kick("lb-us");
    await waitFor(() => lb!.version > 0, 5_000, "the push to be acknowledged");
    assert.deepEqual(
      lines.filter((l) => l.level >= 40).map((l) => l.msg),
      [],
    );

    await lb.close();
    lb = null;
    await setPolicy(h.rt, OPERATOR, { id: "lb-us", policy: "least-load", crossRegion: "direct" });
    await waitFor(() => lines.some((l) => l.level === 40 && l.msg === "config push failed; retrying"), 5_000, "a warning");
  });
});

describe("publishing every LB", () => {
  let h: Harness;
  const { log, lines } = loggedLines("info");
  after(async () => {
    await h?.close();
  });

  test("an LB whose config cannot be built is logged and skipped; the other LBs still get their changes", async () => {
    h = await createHarness({}, log);
    await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
    // via-peer: each LB's config lists only its own replicas.
    await createLb(h.rt, OPERATOR, { name: "lb-a", url: "http://127.0.0.1:9", region: "us-ashburn", crossRegion: "via-peer" }, "lb-a");
    await createLb(h.rt, OPERATOR, { name: "lb-b", url: "http://127.0.0.1:10", region: "us-ashburn", crossRegion: "via-peer" }, "lb-b");
    // A replica URL the LB config schema refuses, stored before the services checked URLs by that
    // schema: lb-a's config can no longer be built.
    const [region] = await h.rt.store.db.select().from(h.rt.store.tables.regions);
    await h.rt.store.db.insert(h.rt.store.tables.replicas).values({
      id: "r-old",
      name: "r-old",
      url: "http:/10.0.0.5:8000",
      regionId: region!.id,
      engine: "sglang",
      model: "m",
      state: "enabled",
      homeLbId: "lb-a",
      createdAt: Date.now(),
    });

    await createReplica(h.rt, OPERATOR, { name: "r-new", url: "http://10.0.0.6:8000", region: "us-ashburn", engine: "sglang", model: "m", homeLbId: "lb-b" });

    const { lbConfigs } = h.rt.store.tables;
    const [latest] = await h.rt.store.db.select().from(lbConfigs).where(eq(lbConfigs.lbId, "lb-b")).orderBy(desc(lbConfigs.version)).limit(1);
    assert.deepEqual(
      (JSON.parse(latest!.json) as LbConfig).replicas.map((r) => r.id),
      ["r-new"],
      "lb-b's new replica is published",
    );
    assert.ok(
      lines.some((l) => l.level === 50 && l.lbId === "lb-a"),
      "lb-a's failure is logged",
    );
  });
});

describe("starting the publisher", () => {
  let h: Harness;
  let lb: FakeLb | null = null;
  const { log, lines } = loggedLines("info");
  after(async () => {
    await h?.close();
    await lb?.close();
  });

  test("an LB whose first config cannot be built is logged and skipped; the other LBs are pushed", async () => {
    h = await createHarness({}, log);
    await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
    // A replica URL the LB config schema refuses, stored before the services checked URLs by that
    // schema; lb-a (direct: every replica in its config), created after it, stays at version 0.
    const [region] = await h.rt.store.db.select().from(h.rt.store.tables.regions);
    await h.rt.store.db.insert(h.rt.store.tables.replicas).values({
      id: "r-old",
      name: "r-old",
      url: "http:/10.0.0.5:8000",
      regionId: region!.id,
      engine: "sglang",
      model: "m",
      state: "enabled",
      homeLbId: null,
      createdAt: Date.now(),
    });
    await createLb(h.rt, OPERATOR, { name: "lb-a", url: "http://127.0.0.1:9", region: "us-ashburn", crossRegion: "direct" }, "lb-a");
    const { loadBalancers } = h.rt.store.tables;
    assert.equal((await h.rt.store.db.select().from(loadBalancers).where(eq(loadBalancers.id, "lb-a")))[0]?.configVersion, 0, "lb-a has no version");
    // via-peer: lb-b's config lists only its own replicas, so it can be built.
    lb = await startFakeLb({ id: "lb-b", region: "us-ashburn", token: TEST_TOKEN });
    await createLb(h.rt, OPERATOR, { name: "lb-b", url: lb.url, region: "us-ashburn", crossRegion: "via-peer" }, "lb-b");

    const logged = lines.length;
    await h.rt.publisher.start();
    await waitFor(() => lb!.version > 0, 5_000, "lb-b's config pushed");
    assert.ok(
      lines.slice(logged).some((l) => l.level === 50 && l.lbId === "lb-a"),
      "lb-a's failure is logged",
    );
  });
});

describe("a push loop whose LB was deleted on another console", () => {
  let h: Harness;
  let lb: FakeLb | null = null;
  after(async () => {
    await h?.close();
    await lb?.close();
  });

  test("ends, so an LB created again with the same name is pushed its config", async () => {
    h = await createHarness();
    await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
    await createLb(h.rt, OPERATOR, { name: "lb-x", url: `http://127.0.0.1:${await freePort()}`, region: "us-ashburn" });
    await h.rt.publisher.start();
    await waitFor(() => h.rt.publisher.status("lb-x").lastAttemptAt !== null, 5_000, "a first push attempt");

    // Another console on the same database deletes it; this console's loop, woken, finds no row.
    const other = new ConsoleRuntime(h.rt.database, h.rt.options);
    await deleteLb(other, OPERATOR, { id: "lb-x" });
    h.rt.publisher.kick("lb-x");
    await waitFor(() => h.rt.publisher.status("lb-x").lastAttemptAt === null, 5_000, "the loop to end and leave no status behind");

    lb = await startFakeLb({ id: "lb-x", region: "us-ashburn", token: TEST_TOKEN });
    const { id } = await createLb(h.rt, OPERATOR, { name: "lb-x", url: lb.url, region: "us-ashburn" });
    assert.equal(id, "lb-x", "the same id again");
    await waitFor(() => lb!.version > 0, 5_000, "the new LB's config pushed");
    assert.equal(lb.configs.at(-1)?.lbId, "lb-x");
  });
});

describe("an LB that refuses every push", () => {
  let h: Harness;
  after(async () => {
    await h?.close();
  });

  test("is pushed at the backoff's pace, not at every health round that reports its older version", async () => {
    h = await createHarness();
    await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
    await createLb(h.rt, OPERATOR, { name: "lb-old", url: "http://127.0.0.1:9", region: "us-ashburn" }, "lb-old");
    let puts = 0;
    const { log } = loggedLines("silent");
    const publisher = new ConfigPublisher({
      store: h.rt.store,
      log,
      lbClient: {
        // An LB older than the config's schema: every push is refused (400).
        putConfig: async () => {
          puts += 1;
          return { kind: "rejected", status: 400, message: 'lbConfig.schema: unknown version "meridian.lb-config/3"' };
        },
        state: async () => ({ state: null, error: null }),
      },
      leadership: { currentTerm: () => 0 },
      metrics: { countConfigPush: () => undefined },
    });
    try {
      await publisher.start();
      await waitFor(() => puts === 1, 5_000, "the first, refused push");
      const { loadBalancers } = h.rt.store.tables;
      // Ten health rounds, each reading that the LB still runs version 0: none wakes the loop out of
      // the backoff (at least 200 ms after a first refusal), so no push follows meanwhile.
      for (let round = 0; round < 10; round += 1) {
        const [row] = await h.rt.store.db.select().from(loadBalancers).where(eq(loadBalancers.id, "lb-old"));
        await publisher.onReportedVersion(row!, 0);
      }
      assert.equal(puts, 1);
    } finally {
      publisher.stop();
    }
  });
});

describe("a database error while the console reads the LB's token", () => {
  let h: Harness;
  let lb: FakeLb | null = null;
  const { log, lines } = loggedLines("info");
  after(async () => {
    await h?.close();
    await lb?.close();
  });

  test("is the console's failure, not the LB refusing (401): logged, shown as such, retried, and the push lands once the database answers", async () => {
    h = await createHarness({}, log);
    lb = await startFakeLb({ id: "lb-us", region: "us-ashburn", token: TEST_TOKEN });
    await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
    await createLb(h.rt, OPERATOR, { name: "lb-us", url: lb.url, region: "us-ashburn" }, "lb-us");
    const counted: string[] = [];
    const shownAtRetry: (string | null)[] = [];
    let failures = 2;
    let publisher: ConfigPublisher | null = null;
    const lbClient = new LbAdminClient({
      // The first two reads fail as drizzle reports a lost PostgreSQL connection.
      tokens: async (lbId) => {
        if (failures < 2) shownAtRetry.push(publisher!.status(lbId).lastError);
        if (failures > 0) {
          failures -= 1;
          throw new DrizzleQueryError('select "token" from "lb_tokens" where "lb_id" = $1', [lbId], new Error("Connection terminated unexpectedly"));
        }
        return await presentableToken(h.rt.store, lbId);
      },
      proofs: new LbProofBook(),
      timeoutMs: 2_000,
    });
    publisher = new ConfigPublisher({
      store: h.rt.store,
      log,
      lbClient,
      leadership: { currentTerm: () => 0 },
      metrics: { countConfigPush: (_lbId, result) => counted.push(result) },
    });
    try {
      await publisher.start();
      // The console's count, not the fake's version: the fake applies the push before its answer
      // reaches the console (under load this assertion ran in between).
      await waitFor(() => lb!.version > 0 && counted.length > 0, 10_000, "the push once the token is read");
      assert.deepEqual(counted, ["acked"], "no push was counted as the LB's refusal: none was sent");
      assert.equal(shownAtRetry.length, 2);
      for (const shown of shownAtRetry) {
        assert.match(shown ?? "", /^not pushed: the console could not read the LB's token from its database; retrying$/);
      }
      const failed = lines.filter((l) => l.lbId === "lb-us" && l.level >= 40);
      assert.deepEqual(
        failed.map((l) => [l.level, l.msg]),
        [[50, "config push not sent: the console failed before sending it"]],
        "one error line (the first failure), nothing about the LB refusing",
      );
      assert.match(JSON.stringify(failed[0]!.err), /Connection terminated unexpectedly/, "the log keeps the database's error");
      assert.equal(publisher.status("lb-us").lastError, null);
    } finally {
      publisher.stop();
    }
  });
});
