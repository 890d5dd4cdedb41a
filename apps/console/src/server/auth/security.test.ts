// Issue 13, items 9-12 and 14, through the real handlers: a forged forwarded header, an
// X-Forwarded-For rotation brute force, both redirect payloads, a malformed cookie, and every refusal
// in the audit log with the true client address. (Unknown ids → 404: trpc/domain-errors.test.ts.)
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { listAudit, type AuditEntry } from "../services/audit";
import { createHarness, type Harness } from "../testing/harness";
import { CONSOLE_ORIGIN, consoleHeaders, cookieOf, loginRequest, trpcCall } from "../testing/console-requests";
import { appRouter } from "../trpc/root";
import { requireTokenOrSession } from "./api-access";
import { handleLogin, handleLogout } from "./login";
import { LoginThrottle } from "./rate-limit";
import type { RequestSecurity } from "./request-security";
import { SecurityAuditor } from "./security-audit";
import { parseTrustedProxies } from "./trusted-proxies";
import { ensureUsers } from "./users";

const MUTATIONS = Object.entries(appRouter._def.procedures as unknown as Record<string, { _def: { type: string } }>)
  .filter(([, procedure]) => procedure._def.type === "mutation")
  .map(([path]) => path);

const securityAudit = (h: Harness, action = "auth."): Promise<AuditEntry[]> => listAudit(h.rt, { action, limit: 1000 });
/** Every audit row, oldest first. */
const auditRows = async (h: Harness) => {
  const { db, tables } = h.rt.store;
  return await db.select().from(tables.auditLog).orderBy(tables.auditLog.id);
};
const after_ = (entry: AuditEntry) => entry.after as { address: string; status: number; reason: string; repeated?: number };

describe("console security", () => {
  let h: Harness;
  let adminCookie = "";
  before(async () => {
    h = await createHarness();
    await ensureUsers(h.rt.store, { adminPassword: "admin-pass", viewerPassword: "viewer-pass" });
    const res = await handleLogin(h.rt, loginRequest({ username: "admin", password: "admin-pass" }), { throttle: new LoginThrottle() });
    adminCookie = cookieOf(res);
  });
  after(() => h.close());

  test("item 9: a foreign Origin with a matching X-Forwarded-Host runs none of the mutations", async () => {
    assert.ok(MUTATIONS.length >= 20, `found ${MUTATIONS.length} mutations`);
    const auditor = new SecurityAuditor(0);
    const rowsBefore = (await auditRows(h)).length;
    for (const path of MUTATIONS) {
      const res = await trpcCall(
        h.rt,
        path,
        {},
        {
          mutation: true,
          cookie: adminCookie,
          peer: "203.0.113.50",
          origin: "http://evil.example",
          headers: { "x-forwarded-host": "evil.example" },
          auditor,
        },
      );
      assert.equal(res.status, 403, path);
      assert.match(res.error!.message, /^cross-origin request refused: Origin http:\/\/evil\.example does not match the console's host console\.test/);
    }
    const rows = (await auditRows(h)).slice(rowsBefore);
    assert.equal(rows.length, MUTATIONS.length, "one audit row per refusal and no other change");
    assert.ok(rows.every((row) => row.action === "auth.denied" && row.actor === "admin" && JSON.parse(row.after!).address === "203.0.113.50"));
  });

  test("item 9: behind a trusted proxy, its X-Forwarded-Host is believed; MERIDIAN_PUBLIC_URL pins the origin", async () => {
    const proxied: RequestSecurity = { trustedProxies: parseTrustedProxies("10.0.0.5"), publicOrigin: null };
    const viaProxy = {
      mutation: true,
      cookie: adminCookie,
      peer: "10.0.0.5",
      origin: "https://console.example.com",
      headers: { "x-forwarded-host": "console.example.com" },
      security: proxied,
    };
    assert.deepEqual((await trpcCall(h.rt, "regions.create", { name: "via-proxy" }, viaProxy)).data, { id: "via-proxy" });
    const pinned: RequestSecurity = { ...proxied, publicOrigin: "https://console.example.com" };
    assert.equal(
      (await trpcCall(h.rt, "regions.create", { name: "direct" }, { mutation: true, cookie: adminCookie, security: pinned })).status,
      403,
      "Host matches, but is not the public URL",
    );
    assert.deepEqual((await trpcCall(h.rt, "regions.create", { name: "pinned" }, { ...viaProxy, security: pinned })).data, { id: "pinned" });
  });

  test("item 10: forty wrong passwords with rotating X-Forwarded-For are limited on the socket address", async () => {
    const throttle = new LoginThrottle();
    const auditor = new SecurityAuditor(0);
    const statuses: number[] = [];
    for (let i = 0; i < 40; i += 1) {
      const req = loginRequest({ username: "admin", password: `guess-${i}` }, { peer: "198.51.100.23", headers: { "x-forwarded-for": `10.${i}.0.1` } });
      statuses.push((await handleLogin(h.rt, req, { throttle, auditor })).status);
    }
    assert.deepEqual(statuses, [...Array(5).fill(401), ...Array(35).fill(429)]);
    // The right password is refused too while the block lasts: a guess that lands late proves nothing.
    const right = await handleLogin(h.rt, loginRequest({ username: "admin", password: "admin-pass" }, { peer: "198.51.100.23" }), { throttle, auditor });
    assert.equal(right.status, 429);
    assert.equal(right.headers.get("retry-after"), "60");
    // Item 14: the log names the socket address, never the forged one.
    const rows = (await securityAudit(h)).filter((row) => row.target === "user:admin" && after_(row).address === "198.51.100.23");
    assert.equal(rows.filter((row) => row.action === "auth.login.failed").length, 5);
    assert.equal(rows.filter((row) => row.action === "auth.throttled").length, 36);
    assert.ok(!(await securityAudit(h)).some((row) => /^10\.\d+\.0\.1$/.test(after_(row).address)), "no forged address in the audit log");
  });

  test("item 10: behind a trusted proxy, clients are told apart by X-Forwarded-For, and one account is still limited across them", async () => {
    const security: RequestSecurity = { trustedProxies: parseTrustedProxies("10.0.0.5"), publicOrigin: null };
    const throttle = new LoginThrottle();
    const auditor = new SecurityAuditor(0);
    const statuses: number[] = [];
    for (let i = 0; i < 12; i += 1) {
      const req = loginRequest({ username: "viewer", password: "nope" }, { peer: "10.0.0.5", headers: { "x-forwarded-for": `192.0.2.${i}` } });
      statuses.push((await handleLogin(h.rt, req, { throttle, auditor, security })).status);
    }
    assert.deepEqual(statuses, [...Array(10).fill(401), 429, 429], "ten distinct clients fail once each, then the account backs off");
    const last = (await securityAudit(h, "auth.throttled")).find((row) => row.target === "user:viewer")!;
    assert.equal(after_(last).address, "192.0.2.11");
    // Another account from the same proxy is unaffected: the proxy's own address is not the key.
    const other = await handleLogin(
      h.rt,
      loginRequest({ username: "admin", password: "admin-pass" }, { peer: "10.0.0.5", headers: { "x-forwarded-for": "192.0.2.99" } }),
      { throttle, auditor, security },
    );
    assert.equal(other.status, 200);
  });

  test("item 11: both redirect payloads land on the console after a form login", async () => {
    for (const next of ["/\\evil.example/x", "/\t/evil.example/x", "//evil.example/x", "https://evil.example/"]) {
      const ok = await handleLogin(h.rt, loginRequest({ username: "viewer", password: "viewer-pass", next }, { form: true, peer: "192.0.2.200" }), {
        throttle: new LoginThrottle(),
      });
      assert.equal(ok.status, 303);
      assert.equal(ok.headers.get("location"), "/", JSON.stringify(next));
      const failed = await handleLogin(h.rt, loginRequest({ username: "viewer", password: "wrong", next }, { form: true, peer: "192.0.2.201" }), {
        throttle: new LoginThrottle(),
      });
      const location = new URL(failed.headers.get("location")!, CONSOLE_ORIGIN);
      assert.equal(location.origin, CONSOLE_ORIGIN);
      assert.equal(location.searchParams.get("next"), "/");
    }
    const kept = await handleLogin(h.rt, loginRequest({ username: "viewer", password: "viewer-pass", next: "/tuner?lb=x" }, { form: true }), {
      throttle: new LoginThrottle(),
    });
    assert.equal(kept.headers.get("location"), "/tuner?lb=x");
  });

  test("item 12: a malformed session cookie is no session, never a 500", async () => {
    const cookie = "meridian_session=%zz%";
    assert.equal((await trpcCall(h.rt, "regions.list", undefined, { cookie })).status, 401);
    assert.equal((await trpcCall(h.rt, "auth.me", undefined, { cookie })).data, null);
    assert.equal((await trpcCall(h.rt, "regions.create", { name: "x" }, { cookie, mutation: true })).status, 401);
    const logout = await handleLogout(h.rt, new Request(`${CONSOLE_ORIGIN}/api/auth/logout`, { method: "POST", headers: consoleHeaders({ cookie }) }));
    assert.equal(logout.status, 200);
    const entrypoints = await requireTokenOrSession(h.rt, new Request(`${CONSOLE_ORIGIN}/api/entrypoints`, { headers: consoleHeaders({ cookie }) }));
    assert.equal(entrypoints?.status, 401);
  });

  test("item 14: 401 and 403 are audited with the actor, the target and the true address", async () => {
    const auditor = new SecurityAuditor(0);
    await trpcCall(h.rt, "regions.list", undefined, { peer: "192.0.2.10", headers: { "x-forwarded-for": "1.1.1.1" }, auditor });
    const viewer = cookieOf(await handleLogin(h.rt, loginRequest({ username: "viewer", password: "viewer-pass" }), { throttle: new LoginThrottle() }));
    await trpcCall(h.rt, "lbs.failover", { id: "lb-x" }, { cookie: viewer, mutation: true, peer: "192.0.2.11", auditor });
    await requireTokenOrSession(
      h.rt,
      new Request(`${CONSOLE_ORIGIN}/api/entrypoints`, { headers: consoleHeaders({ peer: "192.0.2.12", headers: { authorization: "Bearer wrong" } }) }),
      { auditor },
    );
    const crossLogin = await handleLogin(h.rt, loginRequest({ username: "admin", password: "x" }, { origin: "http://evil.example", peer: "192.0.2.13" }), {
      throttle: new LoginThrottle(),
      auditor,
    });
    assert.equal(crossLogin.status, 403);
    const denied = (await securityAudit(h, "auth.denied")).slice(0, 4).reverse();
    assert.deepEqual(
      denied.map((row) => [row.actor, row.target, after_(row).status, after_(row).address]),
      [
        ["anonymous", "trpc:regions.list", 401, "192.0.2.10"],
        ["viewer", "trpc:lbs.failover", 403, "192.0.2.11"],
        ["anonymous", "api:/api/entrypoints", 401, "192.0.2.12"],
        ["anonymous", "api:/api/auth/login", 403, "192.0.2.13"],
      ],
    );
    assert.match(after_(denied[1]!).reason, /viewer; only operators/);
    assert.equal(after_(denied[2]!).reason, "wrong bearer token");
  });

  test("item 14: a flood of refusals writes one row per window and counts the rest", async () => {
    const auditor = new SecurityAuditor(10_000);
    const event = { action: "auth.denied", actor: "anonymous", target: "trpc:regions.list", address: "192.0.2.77", status: 401, reason: "log in" } as const;
    // All at once, as a flood arrives: the window is decided before each write.
    const written = await Promise.all(Array.from({ length: 100 }, (_, i) => auditor.record(h.rt.store, event, 1_000 + i)));
    assert.equal(written.filter(Boolean).length, 1);
    assert.equal(await auditor.record(h.rt.store, event, 11_000), true);
    const rows = (await securityAudit(h, "auth.denied")).filter((row) => after_(row).address === "192.0.2.77");
    assert.equal(rows.length, 2);
    assert.equal(after_(rows[0]!).repeated, 99);
    // Failed logins are never folded: the throttle already bounds them, and each is a guess.
    const failed = { ...event, action: "auth.login.failed", address: "192.0.2.78" } as const;
    assert.equal([await auditor.record(h.rt.store, failed, 1), await auditor.record(h.rt.store, failed, 2)].filter(Boolean).length, 2);
  });
});
