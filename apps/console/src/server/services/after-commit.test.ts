// r32 dbfaults finding 2: a step that fails after an operator's change committed (the database refused
// a write a moment later: another process took SQLite's lock, a PostgreSQL connection was lost) is
// never answered "nothing was changed, retry". Follow-ups are logged and the change is answered as
// made (lbs.create keeps its one-time token); a tuner change that failed after its run was written
// says it may be saved. An audit row is no follow-up: refused, the tuner change it records is not
// made either. Through the real tRPC handler, as the operator's browser calls it.
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { ensureUsers } from "../auth/users";
import { handleLogin } from "../auth/login";
import { LoginThrottle } from "../auth/rate-limit";
import { createHarness, type Harness, TEST_TOKEN } from "../testing/harness";
import { loggedLines } from "../testing/log-lines";
import { cookieOf, loginRequest, trpcCall } from "../testing/console-requests";
import type { Store } from "@meridian/db";

/** A database refusing a write, as drizzle wraps the driver's error (SQLITE_BUSY: another process holds the lock). */
function refusedWrite(): Error {
  return Object.assign(new Error("Failed query: insert into ..."), {
    cause: Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" }),
  });
}

describe("a follow-up that fails after the operator's change committed", () => {
  let h: Harness;
  let cookie = "";
  const { log, lines } = loggedLines("info");
  const mutate = (path: string, input: unknown) => trpcCall(h.rt, path, input, { cookie, mutation: true });
  const query = async <T>(path: string, input?: unknown) => (await trpcCall(h.rt, path, input, { cookie })).data as T;
  const followUpFailures = () => lines.filter((line) => line.msg.startsWith("operator change saved, but a follow-up failed"));

  /** Runs `body` with `obj[method]` failing as the database refuses a write (`after`: once the real one ran). */
  async function refusing<O extends object, K extends keyof O, T>(obj: O, method: K, body: () => Promise<T>, when: "before" | "after" = "before"): Promise<T> {
    const original = obj[method] as (...args: unknown[]) => unknown;
    obj[method] = (async (...args: unknown[]) => {
      if (when === "after") await original.apply(obj, args);
      throw refusedWrite();
    }) as O[K];
    try {
      return await body();
    } finally {
      obj[method] = original as O[K];
    }
  }

  before(async () => {
    h = await createHarness({}, log);
    await ensureUsers(h.rt.store, { adminPassword: "admin-pass" });
    cookie = cookieOf(await handleLogin(h.rt, loginRequest({ username: "admin", password: "admin-pass" }), { throttle: new LoginThrottle() }));
    assert.equal((await mutate("regions.create", { name: "us-ashburn" })).status, 200);
  });
  after(async () => await h.close());

  test("lbs.create answers the LB and its one-time token when making its tuner and publishing fail", async () => {
    const failedBefore = followUpFailures().length;
    const res = await refusing(h.rt.tuners, "ensure", () =>
      refusing(h.rt.publisher, "publishAll", () => mutate("lbs.create", { name: "lb-us", url: "http://127.0.0.1:1", region: "us-ashburn" })),
    );
    assert.equal(res.status, 200, res.error?.message);
    const created = res.data as { id: string; keyId: string; token: string };
    assert.deepEqual(created, { id: "lb-us", keyId: created.keyId, token: TEST_TOKEN });
    assert.deepEqual(
      (await query<{ name: string }[]>("lbs.list")).map((lb) => lb.name),
      ["lb-us"],
    );
    assert.deepEqual(
      followUpFailures()
        .slice(failedBefore)
        .map((line) => [line.level, line.change, line.step]),
      [
        [50, "lb.create", "tuner"],
        [50, "lb.create", "publish"],
      ],
      "each failed follow-up is logged at error; the rest still ran",
    );
    const retry = await mutate("lbs.create", { name: "lb-us", url: "http://127.0.0.1:1", region: "us-ashburn" });
    assert.equal(retry.status, 409, "it exists: nothing told the operator to retry");
    assert.equal((await mutate("lbs.create", { name: "lb-us-2", url: "http://127.0.0.1:2", region: "us-ashburn" })).status, 200);
  });

  test("lbs.issueToken answers the new token when the publish after it fails", async () => {
    const res = await refusing(h.rt.publisher, "publishAll", () => mutate("lbs.issueToken", { id: "lb-us" }));
    assert.equal(res.status, 200, res.error?.message);
    assert.equal((res.data as { token: string }).token, TEST_TOKEN);
  });

  test("lbs.setPolicy and lbs.update answer the saved change when the publish after it fails", async () => {
    await refusing(h.rt.publisher, "publish", async () => {
      const res = await mutate("lbs.setPolicy", { id: "lb-us", policy: "least-load", crossRegion: "direct" });
      assert.equal(res.status, 200, res.error?.message);
    });
    await refusing(h.rt.publisher, "publishAll", async () => {
      const res = await mutate("lbs.update", { id: "lb-us", url: "http://127.0.0.1:3" });
      assert.equal(res.status, 200, res.error?.message);
    });
    const lb = (await query<{ id: string; policy: string; url: string }[]>("lbs.list")).find((l) => l.id === "lb-us");
    assert.deepEqual([lb?.policy, lb?.url], ["least-load", "http://127.0.0.1:3"]);
  });

  test("lbs.delete answers the deletion when a follow-up fails, and the later ones still run", async () => {
    let published = 0;
    const publishAll = h.rt.publisher.publishAll.bind(h.rt.publisher);
    h.rt.publisher.publishAll = async () => {
      published += 1;
      await publishAll();
    };
    try {
      await refusing(h.rt.telemetry, "sync", async () => {
        const res = await mutate("lbs.delete", { id: "lb-us-2" });
        assert.equal(res.status, 200, res.error?.message);
      });
    } finally {
      h.rt.publisher.publishAll = publishAll;
    }
    assert.equal(published, 1, "the publish after the failed telemetry sync ran");
    assert.deepEqual(
      (await query<{ name: string }[]>("lbs.list")).map((lb) => lb.name),
      ["lb-us"],
    );
  });

  test("a tuner action whose audit row is refused answers that nothing was changed, and changes nothing", async () => {
    const failedBefore = followUpFailures().length;
    const weights = (await query<{ weights: unknown }>("tuner.byLb", { lbId: "lb-us" })).weights;
    // The database refuses the audit row. It is written in the change's transaction, so the change
    // goes with it (it used to be a follow-up: the change saved, the row lost, a 200).
    const store = h.rt.store as { transaction: Store["transaction"] };
    const transaction = store.transaction.bind(store);
    store.transaction = (work) =>
      transaction((tx) => {
        const db = Object.create(tx.db) as typeof tx.db;
        db.insert = ((table: Parameters<typeof tx.db.insert>[0]) => {
          if (table === tx.tables.auditLog) throw refusedWrite();
          return tx.db.insert(table);
        }) as typeof tx.db.insert;
        return work({ ...tx, db } as typeof tx);
      });
    try {
      const res = await mutate("tuner.setManual", { lbId: "lb-us", weights: { rtt: 2, queue: 0.5 } });
      assert.equal(res.status, 503, res.error?.message);
      assert.match(res.error!.message, /nothing was changed, retry in a moment/);
    } finally {
      store.transaction = transaction;
    }
    assert.deepEqual((await query<{ weights: unknown }>("tuner.byLb", { lbId: "lb-us" })).weights, weights, "the weights are as they were");
    assert.equal(followUpFailures().length, failedBefore, "nothing is left to do after a commit");
  });

  test("a tuner action that fails after its run was written says the change may be saved; one refused before says nothing was changed", async () => {
    const weights = { rtt: 3, queue: 0.25 };
    await refusing(
      h.rt.tuners,
      "setManual",
      async () => {
        const res = await mutate("tuner.setManual", { lbId: "lb-us", weights });
        assert.equal(res.status, 500);
        assert.match(res.error!.message, /the change may be saved, reload to check before retrying/);
        assert.doesNotMatch(res.error!.message, /nothing was changed/);
      },
      "after",
    );
    assert.deepEqual((await query<{ weights: unknown }>("tuner.byLb", { lbId: "lb-us" })).weights, weights);
    await refusing(h.rt.tuners, "setManual", async () => {
      const res = await mutate("tuner.setManual", { lbId: "lb-us", weights: { rtt: 4, queue: 0.25 } });
      assert.equal(res.status, 503);
      assert.match(res.error!.message, /nothing was changed, retry in a moment/);
    });
    assert.deepEqual((await query<{ weights: unknown }>("tuner.byLb", { lbId: "lb-us" })).weights, weights);
  });
});
