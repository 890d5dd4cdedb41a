// Who reads the console's /metrics behind a trusted proxy on the console's host (MERIDIAN_TRUSTED_PROXIES
// =loopback): the client the proxy names counts; a proxy that names none (no X-Forwarded-For, as
// nginx sends unless told, or a hop that is not an address) leaves its own loopback address, which
// must not open the metrics to every remote client it relays.
import { strict as assert } from "node:assert";
import { after, before, describe, test } from "node:test";
import { consoleHeaders } from "../testing/console-requests";
import { createHarness, type Harness } from "../testing/harness";
import { requireMetricsAccess } from "./metrics-access";
import { SecurityAuditor } from "./security-audit";
import { parseTrustedProxies } from "./trusted-proxies";

const security = { trustedProxies: parseTrustedProxies("loopback"), publicOrigin: null };

describe("/metrics behind a trusted proxy on the console's host", () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(() => h.close());

  const read = (forwardedFor: string | undefined, authorization?: string) => {
    const headers = consoleHeaders({
      peer: "127.0.0.1",
      origin: null,
      headers: { ...(forwardedFor ? { "x-forwarded-for": forwardedFor } : {}), ...(authorization ? { authorization } : {}) },
    });
    return requireMetricsAccess(h.rt, new Request("http://console.test/metrics", { headers }), {
      token: "metrics-secret-0123",
      security,
      auditor: new SecurityAuditor(),
    });
  };

  test("no named client, or a hop that is no address: refused (401) unless the token is given", async () => {
    assert.equal((await read(undefined))?.status, 401);
    assert.equal((await read("unknown"))?.status, 401);
    assert.equal(await read(undefined, "Bearer metrics-secret-0123"), null);
  });

  test("a client the proxy names is judged by its own address", async () => {
    assert.equal((await read("198.51.100.9"))?.status, 401);
    assert.equal(await read("127.0.0.1"), null, "the proxy says the client is on this host");
    // Without a trusted proxy, a client on the host reads them as before.
    const direct = consoleHeaders({ peer: "127.0.0.1", origin: null });
    const noProxy = { trustedProxies: parseTrustedProxies(""), publicOrigin: null };
    assert.equal(
      await requireMetricsAccess(h.rt, new Request("http://console.test/metrics", { headers: direct }), { token: undefined, security: noProxy }),
      null,
    );
  });
});
