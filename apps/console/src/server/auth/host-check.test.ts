// DNS rebinding: a page on a name the attacker controls, re-pointed at the console's address, is
// same-origin with itself. The console answers it only for the names it is reached by.
import { strict as assert } from "node:assert";
import { hostname } from "node:os";
import { after, before, describe, test } from "node:test";
import { parseConsoleEnv } from "../../env";
import { createHarness, type Harness } from "../testing/harness";
import { consoleHeaders, cookieOf, loginRequest, type RequestOptions, trpcCall } from "../testing/console-requests";
import { AllowedHosts } from "./allowed-hosts";
import { handleLogin } from "./login";
import { requireMetricsAccess } from "./metrics-access";
import { canonicalNameIn, machineNames } from "./machine-names";
import { LoginThrottle } from "./rate-limit";
import { requestSecurityOf } from "./request-security";
import { ensureUsers } from "./users";

/** The request security of a console started with `env` (as its route handlers get it). */
const securityOf = (env: Record<string, string> = {}) => requestSecurityOf(parseConsoleEnv(env));

/** What a browser sends from http://<host> once that name resolves to the console's address. */
const from = (host: string, peer = "127.0.0.1"): RequestOptions => ({ peer, origin: `http://${host}`, headers: { host } });

describe("the host a request is addressed to", () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
    await ensureUsers(h.rt.store, { adminPassword: "meridian-admin", viewerPassword: "meridian-viewer" });
  });
  after(() => h.close());

  const login = (options: RequestOptions, security = securityOf()) =>
    handleLogin(h.rt, loginRequest({ username: "admin", password: "meridian-admin" }, options), { throttle: new LoginThrottle(), security });

  test("a rebound page can neither log in nor run a mutation, and the refusal says why", async () => {
    const security = securityOf();
    const rebound = from("attacker.example:3000");
    const res = await login(rebound, security);
    assert.equal(res.status, 403);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /addressed to host attacker\.example:3000, which is not this console's/);
    // Even with a session taken elsewhere (cookies are not per host in this test), mutations refuse it.
    const cookie = cookieOf(await login(from("127.0.0.1:3000"), security));
    const created = await trpcCall(h.rt, "regions.create", { name: "pwned" }, { ...rebound, cookie, mutation: true, security });
    assert.equal(created.status, 403, JSON.stringify(created));
    const regions = (await trpcCall(h.rt, "regions.list", undefined, { cookie, security })).data as { id: string }[];
    assert.equal(
      regions.some((r) => r.id === "pwned"),
      false,
    );
  });

  test("loopback names, IP addresses on any port, the public URL's host and MERIDIAN_ALLOWED_HOSTS are the console's", async () => {
    for (const host of ["localhost:3000", "127.0.0.1:3000", "[::1]:3000", "LOCALHOST:3100", "192.168.1.5:3000", "localhost"]) {
      assert.equal((await login(from(host))).status, 200, host);
    }
    const configured = securityOf({ MERIDIAN_PUBLIC_URL: "https://console.example.com", MERIDIAN_ALLOWED_HOSTS: "meridian.internal, ops-box" });
    const publicLogin = await login({ peer: "203.0.113.9", origin: "https://console.example.com", headers: { host: "console.example.com" } }, configured);
    assert.equal(publicLogin.status, 200);
    for (const host of ["meridian.internal:3000", "ops-box:3000"]) {
      assert.equal((await login({ ...from(host), origin: "https://console.example.com" }, configured)).status, 200, host);
    }
    // Names that only look like the console's.
    for (const host of ["console.example.com.attacker.example", "127.0.0.1.nip.io:3000", "localhost.attacker.example:3000"]) {
      assert.equal((await login(from(host), configured)).status, 403, host);
    }
  });

  test("behind a trusted proxy, the forwarded host is the one judged", async () => {
    const security = securityOf({ MERIDIAN_TRUSTED_PROXIES: "10.0.0.5" });
    const proxied = { peer: "10.0.0.5", origin: "http://attacker.example", headers: { host: "127.0.0.1:3000", "x-forwarded-host": "attacker.example" } };
    assert.equal((await login(proxied, security)).status, 403);
  });

  test("a rebound page on the console's host cannot read /metrics as a loopback client", async () => {
    const security = securityOf();
    const read = (host: string) =>
      requireMetricsAccess(h.rt, new Request(`http://${host}/metrics`, { headers: consoleHeaders({ ...from(host), origin: null }) }), {
        token: undefined,
        security,
      });
    assert.equal(await read("127.0.0.1:3000"), null);
    assert.equal((await read("attacker.example:3000"))?.status, 401);
  });

  test("with MERIDIAN_PUBLIC_URL, a proxy that rewrites Host to its upstream's name does not lock the operator out", async () => {
    // nginx's default `proxy_pass http://meridian-console:3000;`: Host is the upstream, no X-Forwarded-Host.
    const security = securityOf({ MERIDIAN_PUBLIC_URL: "https://meridian.example.com", MERIDIAN_TRUSTED_PROXIES: "10.0.0.5" });
    const relayed: RequestOptions = {
      peer: "10.0.0.5",
      origin: "https://meridian.example.com",
      headers: { host: "meridian-console:3000", "x-forwarded-for": "203.0.113.7", "x-forwarded-proto": "https" },
    };
    const res = await login(relayed, security);
    assert.equal(res.status, 200, JSON.stringify(await res.clone().json()));
    const cookie = cookieOf(res);
    const created = await trpcCall(h.rt, "regions.create", { name: "behind-nginx" }, { ...relayed, cookie, mutation: true, security });
    assert.equal(created.status, 200, JSON.stringify(created));
    // A rebound page still sends its own name as Origin: refused, through the same proxy or directly.
    assert.equal((await login({ ...relayed, origin: "http://attacker.example:3000" }, security)).status, 403);
    assert.equal((await login(from("attacker.example:3000"), security)).status, 403);
    // A script's login (no Origin) is still judged by the host it names.
    const script = await login({ peer: "127.0.0.1", origin: null, headers: { host: "attacker.example:3000" } }, security);
    assert.equal(script.status, 403);
  });

  test("the name npm start bound the console to (MERIDIAN_HOST) is the console's; an address adds no name", async () => {
    const bound = securityOf({ MERIDIAN_HOST: "Meridian-Console.internal" });
    assert.equal((await login(from("meridian-console.internal:3000"), bound)).status, 200);
    assert.equal((await login(from("attacker.example:3000"), bound)).status, 403);
    for (const address of ["0.0.0.0", "::1", "127.0.0.1"]) {
      assert.equal((await login(from("attacker.example:3000"), securityOf({ MERIDIAN_HOST: address }))).status, 403, address);
    }
  });

  test("the machine's own name is the console's: a login there and a scraper on this machine by that name", async () => {
    const name = `${hostname()}:3000`;
    assert.equal((await login(from(name))).status, 200, name);
    // Debian and Ubuntu map the machine's name to 127.0.1.1: a Prometheus beside the console connects from there.
    const scraped = await requireMetricsAccess(
      h.rt,
      new Request(`http://${name}/metrics`, { headers: consoleHeaders({ peer: "127.0.1.1", origin: null, headers: { host: name } }) }),
      { token: undefined, security: securityOf() },
    );
    assert.equal(scraped?.status ?? 200, 200);
  });

  test("the machine's fully qualified name comes from /etc/hosts, never from a name that merely starts like it", () => {
    const hosts = "127.0.0.1 localhost\n# 10.9.9.9 ops-box.old.example ops-box\n127.0.1.1\tOps-Box.Example.com ops-box  # Debian\n";
    assert.equal(canonicalNameIn(hosts, "ops-box"), "ops-box.example.com");
    assert.deepEqual(machineNames("Ops-Box", hosts), ["ops-box", "ops-box.example.com"]);
    assert.deepEqual(machineNames("ops-box", "127.0.0.1 localhost\n"), ["ops-box"]);
    assert.deepEqual(machineNames("ops-box.example.com", "127.0.1.1 ops-box.example.com ops-box\n"), ["ops-box.example.com"]);
    assert.equal(new AllowedHosts(null, [], machineNames("ops-box", hosts)).allows("ops-box.example.com:3000"), true);
    const security = requestSecurityOf(parseConsoleEnv({}));
    assert.equal(security.allowedHosts?.allows(`${hostname()}.attacker.example`), false);
  });

  test("MERIDIAN_ALLOWED_HOSTS takes names only, and says what is wrong", () => {
    assert.throws(
      () => parseConsoleEnv({ MERIDIAN_ALLOWED_HOSTS: "https://console.example.com" }),
      /MERIDIAN_ALLOWED_HOSTS: "https:\/\/console\.example\.com" is not a host name/,
    );
    assert.throws(() => parseConsoleEnv({ MERIDIAN_ALLOWED_HOSTS: "console.internal:3000" }), /no port/);
    assert.deepEqual(parseConsoleEnv({ MERIDIAN_ALLOWED_HOSTS: " Console.Internal ,," }).MERIDIAN_ALLOWED_HOSTS, ["console.internal"]);
  });
});
