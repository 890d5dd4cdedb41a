// What a refused login looks like to the person at the login page, and what the audit log keeps of it.
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { formErrorMessage } from "../../components/login-messages";
import { createHarness, type Harness } from "../testing/harness";
import { loggedLines } from "../testing/log-lines";
import { cookieOf, loginRequest, trpcCall } from "../testing/console-requests";
import { handleLogin, UNKNOWN_USER_TARGET } from "./login";
import { PasswordCheckGate } from "./password-check-gate";
import { LoginThrottle } from "./rate-limit";
import { SecurityAuditor } from "./security-audit";
import { ensureUsers } from "./users";

/** Where a refused form post sends the browser, and what the login page then says. */
function sentBack(res: Response): { status: number; location: URL; message: string | null } {
  const location = new URL(res.headers.get("location") ?? "", "http://console.test");
  return {
    status: res.status,
    location,
    message: formErrorMessage(location.searchParams.get("error") ?? undefined, location.searchParams.get("retry") ?? undefined),
  };
}

describe("a login form posted without the script", () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
    await ensureUsers(h.rt.store, { adminPassword: "admin-pass" });
  });
  after(() => h.close());

  test("throttled: back to the login page with how long to wait, not a JSON page", async () => {
    const throttle = new LoginThrottle();
    const form = (password: string) => loginRequest({ username: "admin", password, next: "/lbs" }, { form: true, peer: "10.1.1.1" });
    for (let i = 0; i < 5; i += 1) assert.equal(sentBack(await handleLogin(h.rt, form("wrong"), { throttle })).location.searchParams.get("error"), "invalid");
    const back = sentBack(await handleLogin(h.rt, form("admin-pass"), { throttle }));
    assert.equal(back.status, 303);
    assert.equal(back.location.pathname, "/login");
    assert.equal(back.location.searchParams.get("next"), "/lbs");
    assert.equal(back.message, "Too many login attempts. Try again in 60 s.");
    // A script's JSON login still gets the 429 and its Retry-After.
    const json = await handleLogin(h.rt, loginRequest({ username: "admin", password: "admin-pass" }, { peer: "10.1.1.1" }), { throttle });
    assert.equal(json.status, 429);
    assert.equal(json.headers.get("retry-after"), "60");
  });

  test("cross-origin or malformed: back to the login page saying so", async () => {
    const throttle = new LoginThrottle();
    const crossOrigin = sentBack(
      await handleLogin(h.rt, loginRequest({ username: "admin", password: "admin-pass" }, { form: true, origin: "http://evil.example" }), { throttle }),
    );
    assert.equal(crossOrigin.status, 303);
    assert.match(crossOrigin.message ?? "", /refused/);
    const malformed = sentBack(await handleLogin(h.rt, loginRequest({ username: " ", password: "x", next: "/lbs" }, { form: true }), { throttle }));
    assert.equal(malformed.status, 303);
    assert.equal(malformed.location.searchParams.get("next"), "/lbs");
    assert.equal(malformed.message, "Enter a username and a password.");
    const json = await handleLogin(h.rt, loginRequest({ username: "admin", password: "x" }, { origin: "http://evil.example" }), { throttle });
    assert.equal(json.status, 403);
    assert.match(json.headers.get("content-type") ?? "", /json/);
  });

  test("too many password checks in flight: a clear 429 (back to the page for a form), no hashing", async () => {
    const gate = new PasswordCheckGate(0, 0);
    const res = await handleLogin(h.rt, loginRequest({ username: "admin", password: "admin-pass" }), { throttle: new LoginThrottle(), gate });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get("retry-after"), "1");
    const form = sentBack(
      await handleLogin(h.rt, loginRequest({ username: "admin", password: "admin-pass" }, { form: true }), { throttle: new LoginThrottle(), gate }),
    );
    assert.equal(form.message, "Too many login attempts. Try again in 1 s.");
  });
});

describe("what the audit log keeps of a failed login", () => {
  let h: Harness;
  const { log, lines } = loggedLines("warn");
  before(async () => {
    h = await createHarness();
    await ensureUsers(h.rt.store, { adminPassword: "Tr0ub4dor&3-admin", viewerPassword: "viewer-pass" });
  });
  after(() => h.close());

  test("a password typed into the username field reaches neither the viewer nor the log; a known name and the address stay", async () => {
    const throttle = new LoginThrottle();
    const rt = { store: h.rt.store, log, options: h.rt.options };
    const options = { throttle, auditor: new SecurityAuditor() };
    await handleLogin(rt, loginRequest({ username: "Tr0ub4dor&3-admin", password: "x" }, { peer: "192.0.2.50" }), options);
    await handleLogin(rt, loginRequest({ username: "admin", password: "wrong" }, { peer: "192.0.2.51" }), options);
    // Throttled attempts are refused before the password is checked: their rows are masked too.
    for (let i = 0; i < 6; i += 1) await handleLogin(rt, loginRequest({ username: "Tr0ub4dor&3-admin", password: "x" }, { peer: "192.0.2.52" }), options);
    const viewer = cookieOf(await handleLogin(h.rt, loginRequest({ username: "viewer", password: "viewer-pass" }), { throttle }));
    const audit = await trpcCall(h.rt, "audit.list", { action: "auth." }, { cookie: viewer });
    const text = JSON.stringify(audit.data);
    assert.equal(text.includes("Tr0ub4dor"), false, `viewer reads: ${text}`);
    assert.equal(JSON.stringify(lines).includes("Tr0ub4dor"), false, "the log has it");
    const rows = audit.data as { action: string; target: string; after: { address: string } }[];
    assert.ok(rows.some((r) => r.action === "auth.login.failed" && r.target === UNKNOWN_USER_TARGET && r.after.address === "192.0.2.50"));
    assert.ok(rows.some((r) => r.action === "auth.login.failed" && r.target === "user:admin" && r.after.address === "192.0.2.51"));
    assert.ok(rows.some((r) => r.action === "auth.throttled" && r.target === UNKNOWN_USER_TARGET));
  });
});
