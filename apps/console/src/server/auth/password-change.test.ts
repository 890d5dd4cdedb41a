// Changing a user's password (MERIDIAN_ADMIN_PASSWORD at a restart: ensureUsers re-hashes it) ends the
// sessions the old password opened: it is how an operator contains a stolen password. Before, such a
// session kept operator rights for its whole TTL (12 h by default).
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { createHarness, type Harness } from "../testing/harness";
import { cookieOf, loginRequest, trpcCall } from "../testing/console-requests";
import { handleLogin } from "./login";
import { LoginThrottle } from "./rate-limit";
import { ensureUsers } from "./users";

describe("sessions after a password change", () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
    await ensureUsers(h.rt.store, { adminPassword: "leaked-password" });
  });
  after(() => h.close());

  test("a session taken with the old password stops working once the password is changed", async () => {
    const res = await handleLogin(h.rt, loginRequest({ username: "admin", password: "leaked-password" }, { peer: "198.51.100.66" }), {
      throttle: new LoginThrottle(),
    });
    assert.equal(res.status, 200);
    const attacker = cookieOf(res);
    // The operator rotates the password (what a console restart with a new MERIDIAN_ADMIN_PASSWORD does).
    await ensureUsers(h.rt.store, { adminPassword: "new-password-after-incident" });
    const me = await trpcCall(h.rt, "auth.me", undefined, { cookie: attacker });
    const mutation = await trpcCall(h.rt, "regions.create", { name: "attacker-region" }, { cookie: attacker, mutation: true });
    assert.equal(me.data, null, `the old session still resolves to ${JSON.stringify(me.data)}; an operator mutation with it answered ${mutation.status}`);
    assert.equal(mutation.status, 401);
    // The new password opens a session; restarting with the same password ends nothing.
    const fresh = await handleLogin(h.rt, loginRequest({ username: "admin", password: "new-password-after-incident" }, { peer: "198.51.100.67" }), {
      throttle: new LoginThrottle(),
    });
    assert.equal(fresh.status, 200);
    await ensureUsers(h.rt.store, { adminPassword: "new-password-after-incident" });
    assert.notEqual((await trpcCall(h.rt, "auth.me", undefined, { cookie: cookieOf(fresh) })).data, null);
  });
});
