// The console's users follow the passwords it was started with (ensureUsers at startup).
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { createHarness, type Harness } from "../testing/harness";
import { cookieOf, loginRequest, trpcCall } from "../testing/console-requests";
import { handleLogin } from "./login";
import { LoginThrottle } from "./rate-limit";
import { ensureUsers } from "./users";

describe("the viewer after a start without MERIDIAN_VIEWER_PASSWORD", () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  const login = (username: string, password: string) => handleLogin(h.rt, loginRequest({ username, password }), { throttle: new LoginThrottle() });
  const me = async (cookie: string) => (await trpcCall(h.rt, "auth.me", undefined, { cookie })).data as { username: string } | null;

  test("the demo's viewer can no longer log in and its sessions end; the operator's session and password stay", async () => {
    // First run: `npm start` (the demo) passes both published passwords.
    await ensureUsers(h.rt.store, { adminPassword: "meridian-admin", viewerPassword: "meridian-viewer" });
    const viewerSession = cookieOf(await login("viewer", "meridian-viewer"));
    const adminSession = cookieOf(await login("admin", "meridian-admin"));
    // Second run on the same database: an operator-chosen admin password that did not change (a
    // generated one would end the admin's sessions, as any password change does), no viewer.
    const result = await ensureUsers(h.rt.store, { adminPassword: "meridian-admin", viewerPassword: undefined });
    assert.deepEqual(result, { viewerDisabled: true });
    const res = await login("viewer", "meridian-viewer");
    assert.equal(res.status, 401, `the demo viewer still logs in: ${res.status} ${await res.text()}`);
    assert.equal(await me(viewerSession), null, "the viewer's demo session lives on");
    assert.equal((await me(adminSession))?.username, "admin");
    assert.equal((await login("admin", "meridian-admin")).status, 200);
    // A start that again has no viewer password changes nothing more.
    assert.deepEqual(await ensureUsers(h.rt.store, {}), { viewerDisabled: false });
  });

  test("a later start with MERIDIAN_VIEWER_PASSWORD gives the viewer that password", async () => {
    await ensureUsers(h.rt.store, { viewerPassword: "chosen-viewer-pass" });
    assert.equal((await login("viewer", "chosen-viewer-pass")).status, 200);
    assert.equal((await login("viewer", "meridian-viewer")).status, 401);
  });
});
