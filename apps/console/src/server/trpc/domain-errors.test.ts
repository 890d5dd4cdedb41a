// Issue 15 item 2 and issue 13 item 12: every kind of domain error reaches the operator as its 4xx
// through the real tRPC handler, and is logged at info without a stack, never at error.
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { TRPCError } from "@trpc/server";
import { join } from "node:path";
import { openDb } from "@meridian/db";
import { ensureUsers } from "../auth/users";
import { listLbs } from "../services/lbs";
import { handleLogin } from "../auth/login";
import { LoginThrottle } from "../auth/rate-limit";
import type * as ErrorsModule from "../errors";
import { createHarness, type Harness } from "../testing/harness";
import { loggedLines } from "../testing/log-lines";
import { cookieOf, loginRequest, trpcCall } from "../testing/console-requests";
import { call } from "./errors";

describe("domain errors through tRPC", () => {
  let h: Harness;
  let cookie = "";
  const { log, lines } = loggedLines("info");
  const mutate = (path: string, input: unknown) => trpcCall(h.rt, path, input, { cookie, mutation: true });

  before(async () => {
    // A simulator that never finishes on its own, so two runs fill the runner (ExperimentRunner stops it).
    h = await createHarness({ simCommand: () => ({ command: process.execPath, args: ["-e", "setInterval(() => {}, 1000)"], cwd: process.cwd() }) }, log);
    await ensureUsers(h.rt.store, { adminPassword: "admin-pass" });
    cookie = cookieOf(await handleLogin(h.rt, loginRequest({ username: "admin", password: "admin-pass" }), { throttle: new LoginThrottle() }));
    assert.equal((await mutate("regions.create", { name: "us-ashburn" })).status, 200);
    assert.equal((await mutate("lbs.create", { name: "lb-us", url: "http://127.0.0.1:1", region: "us-ashburn" })).status, 200);
  });
  after(async () => {
    await h.rt.experiments.stop();
    await h.close();
  });

  const cases: { kind: string; path: string; input: unknown; status: number; code: string; message: RegExp }[] = [
    {
      kind: "not-found",
      path: "lbs.failover",
      input: { id: "no-such-lb" },
      status: 404,
      code: "NOT_FOUND",
      message: /^load balancer "no-such-lb" does not exist$/,
    },
    { kind: "not-found", path: "lbs.failback", input: { id: "no-such-lb" }, status: 404, code: "NOT_FOUND", message: /does not exist/ },
    {
      kind: "not-found",
      path: "experiments.run",
      input: { traceId: "no-such-trace", timeScale: 1, policies: ["gorgo"] },
      status: 404,
      code: "NOT_FOUND",
      message: /^trace "no-such-trace" does not exist$/,
    },
    {
      kind: "not-found",
      path: "experiments.save",
      input: { id: "no-such-run", name: "x" },
      status: 404,
      code: "NOT_FOUND",
      message: /experiment "no-such-run"/,
    },
    { kind: "not-found", path: "tuner.start", input: { lbId: "no-such-lb" }, status: 404, code: "NOT_FOUND", message: /does not exist/ },
    { kind: "conflict", path: "regions.create", input: { name: "us-ashburn" }, status: 409, code: "CONFLICT", message: /already exists/ },
    {
      kind: "invalid",
      path: "tuner.setManual",
      input: { lbId: "lb-us", weights: { rtt: 500, queue: 0.1 } },
      status: 400,
      code: "BAD_REQUEST",
      message: /^W_rtt 500 is outside the bounds \[0\.05, 100\]$/,
    },
    {
      kind: "invalid",
      path: "lbs.create",
      input: { name: "x", url: "ftp://x", region: "us-ashburn" },
      status: 400,
      code: "BAD_REQUEST",
      message: /http or https/,
    },
    {
      kind: "precondition",
      path: "lbs.failback",
      input: { id: "lb-us" },
      status: 412,
      code: "PRECONDITION_FAILED",
      message: /is not failed over; nothing to fail back/,
    },
    { kind: "precondition", path: "lbs.failover", input: { id: "lb-us" }, status: 412, code: "PRECONDITION_FAILED", message: /only healthy load balancer/ },
    {
      kind: "precondition",
      path: "regions.delete",
      input: { id: "us-ashburn" },
      status: 412,
      code: "PRECONDITION_FAILED",
      message: /still has 1 load balancer/,
    },
  ];

  for (const c of cases) {
    test(`${c.kind}: ${c.path} answers ${c.status}`, async () => {
      const res = await mutate(c.path, c.input);
      assert.equal(res.status, c.status);
      assert.equal(res.error?.data.code, c.code);
      assert.match(res.error!.message, c.message);
    });
  }

  test("busy: a third concurrent experiment answers 429 (try again later)", async () => {
    const run = { traceId: "bundled", timeScale: 1, policies: ["gorgo"] };
    assert.equal((await mutate("experiments.run", run)).status, 200);
    assert.equal((await mutate("experiments.run", run)).status, 200);
    const third = await mutate("experiments.run", run);
    assert.equal(third.status, 429);
    assert.equal(third.error?.data.code, "TOO_MANY_REQUESTS");
    assert.match(third.error!.message, /2 experiments are already running; wait for one to finish/);
  });

  test("a mutation while another process holds the database's write lock is a 503, and changes nothing", async (t) => {
    // SQLite only: a PostgreSQL write waits for a row lock instead of failing, so there is no 503 to see.
    if (h.database.dialect !== "sqlite") {
      t.skip("SQLite's file lock; PostgreSQL waits for row locks");
      return;
    }
    const other = openDb(join(h.dir, "console.db")).$client;
    other.pragma("busy_timeout = 0");
    other.exec("BEGIN EXCLUSIVE");
    try {
      const res = await mutate("lbs.setPolicy", { id: "lb-us", policy: "least-load", crossRegion: "direct" });
      assert.equal(res.status, 503);
      assert.match(res.error!.message, /database is locked by another process; nothing was changed/);
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
    assert.equal((await listLbs(h.rt)).find((lb) => lb.id === "lb-us")?.policy, "gorgo");
    assert.equal((await mutate("lbs.setPolicy", { id: "lb-us", policy: "least-load", crossRegion: "direct" })).status, 200, "a retry after the lock succeeds");
  });

  test("bad input is a 400 naming the field", async () => {
    const res = await mutate("tuner.setManual", { lbId: "lb-us", weights: { rtt: -1, queue: 0.1 } });
    assert.equal(res.status, 400);
    assert.match(res.error!.message, /^weights\.rtt: weights must be positive numbers$/);
    const huge = await mutate("tuner.setManual", { lbId: "lb-us", weights: { rtt: 1, queue: 1e307 } });
    assert.equal(huge.status, 400, "a weight no LB accepts is refused here, not pushed to fail at every LB");
    assert.match(huge.error!.message, /^weights\.queue: weights must be at most 1000000$/);
  });

  test("a guardrail share cap of 0 is refused (every measurement would break it); 0 stays a strict E2E ratio and error cap", async () => {
    const guard = (over: Record<string, number>) => ({ enabled: true, e2eRatio: 0.25, maxShare: 0.8, maxErrorRate: 0.05, ...over });
    const zeroShare = await mutate("tuner.update", { lbId: "lb-us", guardrails: guard({ maxShare: 0 }) });
    assert.equal(zeroShare.status, 400);
    assert.match(zeroShare.error!.message, /^guardrails\.maxShare: maxShare must be within \(0, 1\]: every measurement breaks a share cap of 0$/);
    const over = await mutate("tuner.update", { lbId: "lb-us", guardrails: guard({ maxShare: 1.5 }) });
    assert.equal(over.status, 400);
    assert.match(over.error!.message, /^guardrails\.maxShare: maxShare must be within \(0, 1\]$/);
    const state = await trpcCall(h.rt, "tuner.byLb", { lbId: "lb-us" }, { cookie });
    assert.equal((state.data as { guardrails: { maxShare: number } }).guardrails.maxShare, 0.8, "the refused updates changed nothing");
    const strict = await mutate("tuner.update", { lbId: "lb-us", guardrails: guard({ e2eRatio: 0, maxErrorRate: 0 }) });
    assert.equal(strict.status, 200, strict.error?.message);
  });

  test("a domain error from another copy of errors.ts (Next bundles the runtime apart from the routers) keeps its status", async () => {
    // A second module instance, as instrumentation.ts's bundle has: the bug behind the 500s in production.
    const copy = (await import(new URL("../errors.ts?second-bundle", import.meta.url).href)) as typeof ErrorsModule;
    const original = h.rt.failover.failback.bind(h.rt.failover);
    h.rt.failover.failback = (lbId) => {
      throw copy.precondition(`load balancer "${lbId}" is not failed over; nothing to fail back`);
    };
    try {
      const res = await mutate("lbs.failback", { id: "lb-us" });
      assert.equal(res.status, 412);
      assert.equal(res.error?.data.code, "PRECONDITION_FAILED");
    } finally {
      h.rt.failover.failback = original;
    }
  });

  test("domain errors are logged at info with path and status, never at error, never with a stack", async () => {
    await mutate("lbs.failback", { id: "lb-us" });
    const refusals = lines.filter((line) => line.msg === "tRPC request refused");
    assert.ok(refusals.length >= cases.length + 2, `${refusals.length} info lines`);
    assert.ok(refusals.every((line) => line.level === 30 && line.err === undefined));
    assert.ok(refusals.some((line) => line.path === "lbs.failback" && line.status === 412));
    assert.deepEqual(
      lines.filter((line) => line.level >= 50),
      [],
    );
  });

  test("a bug is still a 500, logged at error with its stack", async () => {
    const original = h.rt.failover.failback.bind(h.rt.failover);
    h.rt.failover.failback = () => {
      throw new TypeError("cannot read properties of undefined");
    };
    try {
      assert.equal((await mutate("lbs.failback", { id: "lb-us" })).status, 500);
    } finally {
      h.rt.failover.failback = original;
    }
    const errors = lines.filter((line) => line.level === 50);
    assert.equal(errors.length, 1);
    assert.match((errors[0]?.err as { stack?: string } | undefined)?.stack ?? "", /TypeError: cannot read properties of undefined/);
  });

  test("PostgreSQL: a unique violation (another console won a race) is a 409, a deadlock a 503; both as drizzle wraps them", async () => {
    const driverError = (code: string) => Object.assign(new Error("failed query"), { cause: Object.assign(new Error(`pg ${code}`), { code }) });
    await assert.rejects(
      call(() => Promise.reject(driverError("23505"))),
      (error: unknown) => error instanceof TRPCError && error.code === "CONFLICT" && /another console made the same change/.test(error.message),
    );
    await assert.rejects(
      call(async () => {
        throw driverError("40P01");
      }),
      (error: unknown) => error instanceof TRPCError && error.code === "SERVICE_UNAVAILABLE",
    );
    const bug = new TypeError("a bug");
    await assert.rejects(
      call(() => Promise.reject(bug)),
      (error: unknown) => error === bug,
      "anything else passes through (a 500)",
    );
  });
});
