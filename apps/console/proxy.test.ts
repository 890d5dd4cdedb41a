import { strict as assert } from "node:assert";
import { test } from "node:test";
import { NextRequest } from "next/server";
import { proxy } from "./proxy";

test("cookie-less page requests go to /login with the page to return to", () => {
  const res = proxy(new NextRequest("http://console.test/replicas?x=1"));
  assert.equal(res.status, 307);
  const location = new URL(res.headers.get("location")!);
  assert.equal(location.pathname, "/login");
  assert.equal(location.searchParams.get("next"), "/replicas?x=1");
});

test("cookie-less API calls get 401; public paths and requests with a session cookie pass", async () => {
  const api = proxy(new NextRequest("http://console.test/api/unknown"));
  assert.equal(api.status, 401);
  assert.deepEqual(await api.json(), { error: { message: "log in to use the console" } });
  // tRPC answers 401 itself (and audits it), so it passes the gate.
  for (const path of ["/login", "/api/auth/login", "/api/health", "/api/entrypoints", "/metrics", "/api/trpc/regions.list"]) {
    assert.equal(proxy(new NextRequest(`http://console.test${path}`)).headers.get("x-middleware-next"), "1", path);
  }
  const withCookie = proxy(new NextRequest("http://console.test/lbs", { headers: { cookie: "meridian_session=abc" } }));
  assert.equal(withCookie.headers.get("x-middleware-next"), "1");
});
