// A failure the console did not map (a database error no rule names, a bug) reaches the operator as
// a 500 that says what failed and under which id, never the SQL and the values drizzle puts in its
// message; the console's log has the whole error under the same id. Mapped errors keep their words.
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { DrizzleQueryError } from "drizzle-orm/errors";
import { ensureUsers } from "../auth/users";
import { handleLogin } from "../auth/login";
import { LoginThrottle } from "../auth/rate-limit";
import { ChangeMaybeSavedError } from "../services/after-commit";
import { createHarness, type Harness } from "../testing/harness";
import { loggedLines } from "../testing/log-lines";
import { cookieOf, loginRequest, trpcCall } from "../testing/console-requests";

describe("unmapped errors through tRPC", () => {
  let h: Harness;
  let cookie = "";
  const { log, lines } = loggedLines("info");
  const failback = () => trpcCall(h.rt, "lbs.failback", { id: "lb-us" }, { cookie, mutation: true });

  before(async () => {
    h = await createHarness({}, log);
    await ensureUsers(h.rt.store, { adminPassword: "admin-pass" });
    cookie = cookieOf(await handleLogin(h.rt, loginRequest({ username: "admin", password: "admin-pass" }), { throttle: new LoginThrottle() }));
    assert.equal((await trpcCall(h.rt, "regions.create", { name: "us-ashburn" }, { cookie, mutation: true })).status, 200);
    assert.equal(
      (await trpcCall(h.rt, "lbs.create", { name: "lb-us", url: "http://127.0.0.1:1", region: "us-ashburn" }, { cookie, mutation: true })).status,
      200,
    );
  });
  after(() => h.close());

  /** Runs `call` with lbs.failback's service replaced by `replacement`. */
  async function withFailback<T>(replacement: () => Promise<never>, call: () => Promise<T>): Promise<T> {
    const original = h.rt.failover.failback.bind(h.rt.failover);
    h.rt.failover.failback = replacement;
    try {
      return await call();
    } finally {
      h.rt.failover.failback = original;
    }
  }

  // drizzle's wrapper of a driver's error, as its PostgreSQL session throws it: "Failed query: <sql>\nparams: <values>".
  const wrapped = new DrizzleQueryError(
    'insert into "lb_tokens" ("lb_id", "token") values ($1, $2)',
    ["lb-us", "s3cret-value"],
    Object.assign(new Error('null value in column "state" violates not-null constraint'), { code: "23502" }),
  );
  const failures: Record<string, () => Promise<never>> = {
    // A real write the database refuses (NOT NULL), on either store.
    "a write the database refuses": async () => {
      await h.rt.store.db.insert(h.rt.store.tables.regions).values({ id: "s3cret-value", name: null as unknown as string, createdAt: 1 });
      throw new Error("the insert was expected to fail");
    },
    "drizzle's Failed query": async () => {
      throw wrapped;
    },
  };
  for (const [name, failing] of Object.entries(failures)) {
    test(`${name}: a 500 naming no SQL and no value; the log has the whole error under the answer's id`, async () => {
      const res = await withFailback(failing, failback);
      assert.equal(res.status, 500);
      const answered = JSON.stringify(res.error);
      assert.doesNotMatch(
        answered,
        /s3cret-value|regions|lb_tokens|Failed query|insert into|constraint/i,
        "neither the statement nor its values reach the operator",
      );
      const match = /^the console's database failed on this request \(error ([0-9a-f]{8})\); the details are in the console's log$/.exec(res.error!.message);
      assert.ok(match, res.error!.message);
      const logged = lines.filter((line) => line.level === 50 && line.errorId === match[1]);
      assert.equal(logged.length, 1, "one error line under the same id");
      assert.match(JSON.stringify(logged[0]!.err), /regions\.name|s3cret-value/, "the log keeps the whole error");
    });
  }

  test("a bug is a 500 with an id, not its own message", async () => {
    const res = await withFailback(async () => {
      throw new TypeError("cannot read properties of undefined (reading 'token')");
    }, failback);
    assert.equal(res.status, 500);
    assert.match(res.error!.message, /^the console failed on this request \(error [0-9a-f]{8}\); the details are in the console's log$/);
  });

  test("intentional errors keep their message: a change that may be saved (500), a domain error (412)", async () => {
    const maybe = await withFailback(async () => {
      throw new ChangeMaybeSavedError("the change may be saved, reload to check before retrying");
    }, failback);
    assert.equal(maybe.status, 500);
    assert.equal(maybe.error!.message, "the change may be saved, reload to check before retrying");
    const refused = await failback();
    assert.equal(refused.status, 412);
    assert.match(refused.error!.message, /is not failed over; nothing to fail back/);
  });
});
