import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { createDatabase } from "@meridian/db";
import { createHarness, type Harness } from "../testing/harness";
import { CONSOLE_ORIGIN, consoleHeaders, cookieOf, loginRequest, trpcCall } from "../testing/console-requests";
import { handleLogin, handleLogout } from "./login";
import { hashPassword, verifyPassword } from "./password";
import { LoginThrottle } from "./rate-limit";
import { createSession, deleteSession, resolveSession } from "./session-store";
import { ensureUsers } from "./users";

const trpc = (h: Harness, path: string, input: unknown, options: Parameters<typeof trpcCall>[3] = {}) => trpcCall(h.rt, path, input, options);

describe("passwords and sessions", () => {
  test("scrypt hashes verify and never contain the password", async () => {
    const hash = await hashPassword("s3cret!");
    assert.match(hash, /^scrypt\$/);
    assert.ok(!hash.includes("s3cret"));
    assert.equal(await verifyPassword("s3cret!", hash), true);
    assert.equal(await verifyPassword("wrong", hash), false);
    assert.equal(await verifyPassword("s3cret!", "garbage"), false);
  });
});

describe("login, sessions and tRPC authorisation", () => {
  let h: Harness;
  let adminCookie = "";
  let viewerCookie = "";
  before(async () => {
    h = await createHarness();
    await ensureUsers(h.rt.store, { adminPassword: "admin-pass", viewerPassword: "viewer-pass" });
  });
  after(() => h.close());

  test("login sets an HttpOnly SameSite=Strict cookie; the token is stored hashed", async () => {
    const res = await handleLogin(h.rt, loginRequest({ username: "admin", password: "admin-pass" }), { throttle: new LoginThrottle() });
    assert.equal(res.status, 200);
    const setCookie = res.headers.get("set-cookie")!;
    assert.match(setCookie, /HttpOnly/);
    assert.match(setCookie, /SameSite=Strict/);
    assert.match(setCookie, /Path=\//);
    adminCookie = cookieOf(res);
    const token = adminCookie.split("=")[1]!;
    const stored = await h.rt.store.db.select().from(h.rt.store.tables.sessions);
    assert.equal(stored.length, 1);
    assert.notEqual(stored[0]!.tokenHash, token);
    assert.deepEqual(await res.json(), { ok: true, user: { username: "admin", role: "operator" } });
    const form = await handleLogin(h.rt, loginRequest({ username: "viewer", password: "viewer-pass", next: "/replicas" }, { form: true }), {
      throttle: new LoginThrottle(),
    });
    assert.equal(form.status, 303);
    assert.equal(form.headers.get("location"), "/replicas");
    viewerCookie = cookieOf(form);
  });

  test("bad passwords get 401, then 429 after five failures; cross-origin logins are refused", async () => {
    const limiter = { throttle: new LoginThrottle() };
    for (let i = 0; i < 5; i += 1) {
      const res = await handleLogin(h.rt, loginRequest({ username: "admin", password: "nope" }, { peer: "10.9.9.9" }), limiter);
      assert.equal(res.status, 401);
    }
    const limited = await handleLogin(h.rt, loginRequest({ username: "admin", password: "admin-pass" }, { peer: "10.9.9.9" }), limiter);
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers.get("retry-after")) > 0);
    const crossOrigin = await handleLogin(h.rt, loginRequest({ username: "admin", password: "admin-pass" }, { origin: "http://evil.test" }), limiter);
    assert.equal(crossOrigin.status, 403);
    const browserWithoutOrigin = loginRequest({ username: "admin", password: "admin-pass" }, { origin: null, headers: { "sec-fetch-site": "cross-site" } });
    assert.equal((await handleLogin(h.rt, browserWithoutOrigin, limiter)).status, 403);
    // A script (curl) sends neither Origin nor Sec-Fetch-Site; login has no ambient credential to abuse.
    const script = await handleLogin(h.rt, loginRequest({ username: "admin", password: "admin-pass" }, { origin: null, peer: "10.1.1.1" }), limiter);
    assert.equal(script.status, 200);
  });

  test("auth.me answers for the session; queries need a session", async () => {
    assert.deepEqual((await trpc(h, "auth.me", undefined, { cookie: adminCookie })).data, { username: "admin", role: "operator" });
    assert.equal((await trpc(h, "auth.me", undefined)).data, null);
    const anonymous = await trpc(h, "regions.list", undefined);
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.error?.data.code, "UNAUTHORIZED");
    assert.deepEqual((await trpc(h, "regions.list", undefined, { cookie: viewerCookie })).data, []);
  });

  test("mutations: viewers get FORBIDDEN, operators succeed, cross-origin is refused, bad input explains itself", async () => {
    const viewer = await trpc(h, "regions.create", { name: "us-ashburn" }, { cookie: viewerCookie, mutation: true });
    assert.equal(viewer.status, 403);
    assert.equal(viewer.error?.data.code, "FORBIDDEN");
    const created = await trpc(h, "regions.create", { name: "us-ashburn" }, { cookie: adminCookie, mutation: true });
    assert.deepEqual(created.data, { id: "us-ashburn" });
    const duplicate = await trpc(h, "regions.create", { name: "us-ashburn" }, { cookie: adminCookie, mutation: true });
    assert.equal(duplicate.error?.data.code, "CONFLICT");
    assert.equal(duplicate.error?.message, 'a region named "us-ashburn" already exists');
    const badName = await trpc(h, "regions.create", { name: "US East!" }, { cookie: adminCookie, mutation: true });
    assert.equal(badName.error?.data.code, "BAD_REQUEST");
    assert.match(badName.error!.message, /^name: region names use lowercase letters/);
    const crossOrigin = await trpc(h, "regions.create", { name: "eu-frankfurt" }, { cookie: adminCookie, mutation: true, origin: "http://evil.test" });
    assert.equal(crossOrigin.status, 403);
    const badUrl = await trpc(h, "lbs.create", { name: "lb", url: "ftp://x", region: "us-ashburn" }, { cookie: adminCookie, mutation: true });
    assert.equal(badUrl.error?.data.code, "BAD_REQUEST");
    assert.match(badUrl.error!.message, /http or https/);
    const lb = await trpc(h, "lbs.create", { name: "lb-us", url: "http://127.0.0.1:1", region: "us-ashburn" }, { cookie: adminCookie, mutation: true });
    assert.equal((lb.data as { id: string }).id, "lb-us");
    const outOfBounds = await trpc(h, "tuner.setManual", { lbId: "lb-us", weights: { rtt: 0.5, queue: 12 } }, { cookie: adminCookie, mutation: true });
    assert.equal(outOfBounds.error?.data.code, "BAD_REQUEST");
    assert.match(outOfBounds.error!.message, /W_queue 12 is outside the bounds \[0.05, 10\]/);
    const onlyLb = await trpc(h, "lbs.failover", { id: "lb-us" }, { cookie: adminCookie, mutation: true });
    assert.equal(onlyLb.error?.data.code, "PRECONDITION_FAILED");
    assert.match(onlyLb.error!.message, /only healthy load balancer/);
    const tuner = await trpc(h, "tuner.byLb", { lbId: "lb-us" }, { cookie: viewerCookie });
    assert.deepEqual((tuner.data as { bounds: unknown }).bounds, { rtt: [0.05, 100], queue: [0.05, 10] });
    const summary = await trpc(h, "overview.summary", undefined, { cookie: viewerCookie });
    assert.equal((summary.data as { regions: { lbs: unknown[] }[] }).regions[0]?.lbs.length, 1);
  });

  test("logout deletes the session; expired sessions resolve to nobody", async () => {
    const headers = consoleHeaders({ cookie: viewerCookie });
    const res = await handleLogout(h.rt, new Request(`${CONSOLE_ORIGIN}/api/auth/logout`, { method: "POST", headers }));
    assert.equal(res.status, 200);
    assert.match(res.headers.get("set-cookie")!, /Max-Age=0/);
    assert.equal((await trpc(h, "auth.me", undefined, { cookie: viewerCookie })).data, null);
    const { token } = await createSession(h.rt.store, 1, 1_000, 0);
    assert.equal(await resolveSession(h.rt.store, token, 5_000), null);
  });

  test("a session made by one console is answered by another on the same database", async () => {
    const other = createDatabase(h.settings);
    try {
      const { token } = await createSession(h.rt.store, 1, 60_000);
      assert.deepEqual(await resolveSession(other.store, token), { id: 1, username: "admin", role: "operator" });
      await deleteSession(other.store, token);
      assert.equal(await resolveSession(h.rt.store, token), null, "a logout on either console ends it on both");
    } finally {
      await other.close();
    }
  });
});
