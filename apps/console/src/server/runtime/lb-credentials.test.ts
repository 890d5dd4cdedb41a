// Issue 13 item 13 at the console: a listener registered as an LB gets the challenge and no
// credential, from the console or from any LB (it never becomes a peer); an LB registered at another
// LB's URL does not get its token either; a relayed proof fails; issuing a new token leaves the LB
// unmanaged until it is configured with it, then the old tokens are retired on the LB.
import { strict as assert } from "node:assert";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { request } from "undici";
import type { LbTokenRow } from "@meridian/db";
import { generateLbToken, lbKeyId } from "@meridian/protocol/credentials";
import type { LbConfig } from "@meridian/protocol";
import { listAudit } from "../services/audit";
import { lbTokenRows } from "./lb-token-rows";
import { createLb, listLbs } from "../services/lbs";
import { issueLbToken } from "../services/lb-tokens";
import { createRegion } from "../services/regions";
import { createHarness, OPERATOR, waitFor, type Harness } from "../testing/harness";
import { startFakeLb, type FakeLb } from "../testing/fake-lb";

/** What the issue's report registered as an LB: a listener that answers 200 to everything and
 * records what it was sent. With `relayTo`, it forwards GET /admin/proof to a real LB (a relay). */
async function startListener(relayTo?: string): Promise<{ url: string; requests: { path: string; authorization?: string }[]; close(): Promise<void> }> {
  const requests: { path: string; authorization?: string }[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    requests.push({ path: req.url ?? "/", ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}) });
    req.resume();
    if (relayTo && req.url?.startsWith("/admin/proof")) {
      void request(`${relayTo}${req.url}`)
        .then(async (answer) => res.writeHead(answer.statusCode, { "content-type": "application/json" }).end(await answer.body.text()))
        // The real LB closed first (teardown): the relay answers nothing, like a dead relay.
        .catch(() => res.destroy());
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const latestConfig = async (h: Harness, lbId: string): Promise<LbConfig | undefined> =>
  (await h.rt.store.db.select().from(h.rt.store.tables.lbConfigs))
    .filter((c) => c.lbId === lbId)
    .map((c) => JSON.parse(c.json) as LbConfig)
    .sort((a, b) => b.version - a.version)[0];

describe("LB credentials at the console", () => {
  let h: Harness;
  const real: Record<string, FakeLb> = {};
  const tokens: Record<string, string> = {};
  let impostor: Awaited<ReturnType<typeof startListener>>;
  let relay: Awaited<ReturnType<typeof startListener>>;

  before(async () => {
    h = await createHarness({ newLbToken: generateLbToken, healthIntervalMs: 100 });
    for (const region of ["us", "eu"]) {
      await createRegion(h.rt, OPERATOR, { name: region });
      real[region] = await startFakeLb({ id: `lb-${region}`, region, token: null });
      const created = await createLb(h.rt, OPERATOR, { name: `lb-${region}`, url: real[region]!.url, region });
      // The operator configures the LB with the token the console showed once.
      tokens[region] = created.token;
      real[region]!.tokens = [created.token];
    }
    impostor = await startListener();
    relay = await startListener(real.us!.url);
    await createLb(h.rt, OPERATOR, { name: "lb-impostor", url: impostor.url, region: "us" });
    await createLb(h.rt, OPERATOR, { name: "lb-relay", url: relay.url, region: "eu" });
    // An LB registered at lb-us's URL: lb-us holds lb-us's token, not this one's.
    await createLb(h.rt, OPERATOR, { name: "lb-twin", url: real.us!.url, region: "us" });
    await h.rt.start();
  });
  after(async () => {
    await h.close();
    for (const lb of Object.values(real)) await lb.close();
    await impostor.close();
    await relay.close();
  });

  test("the real LBs prove themselves, get their configs and list each other as peers", async () => {
    await waitFor(() => real.us!.version > 0 && real.eu!.version > 0, 10_000, "configs acknowledged");
    await waitFor(
      async () => (await latestConfig(h, "lb-us"))?.peers.some((p) => p.id === "lb-eu") && real.us!.configs.at(-1)?.peers.some((p) => p.id === "lb-eu"),
      10_000,
      "lb-eu a peer of lb-us",
    );
    assert.ok(
      real.us!.authorizations.every((a) => a === `Bearer ${tokens.us}`),
      "lb-us only ever got its own token",
    );
    assert.ok(real.eu!.authorizations.every((a) => a === `Bearer ${tokens.eu}`));
    const views = new Map((await listLbs(h.rt)).map((lb) => [lb.name, lb.credential]));
    assert.equal(views.get("lb-us")?.proven, true);
    assert.equal(views.get("lb-us")?.keyId, lbKeyId(tokens.us!));
  });

  test("a listener registered as an LB, a relay and an LB at another LB's URL receive no credential and are nobody's peer", async () => {
    const errorOf = async (name: string) => (await listLbs(h.rt)).find((lb) => lb.name === name)?.credential.error;
    // Wait for the verdicts themselves: on a loaded machine one relayed challenge may first time out
    // (an error too), and the next challenge gives the relay's real answer.
    await waitFor(
      async () =>
        /not a Meridian LB|lbProof/.test((await errorOf("lb-impostor")) ?? "") &&
        /is "lb-us", not "lb-relay"/.test((await errorOf("lb-relay")) ?? "") &&
        /is "lb-us", not "lb-twin"/.test((await errorOf("lb-twin")) ?? ""),
      10_000,
      "every challenge answered with its verdict",
    );
    await waitFor(() => impostor.requests.filter((r) => r.path.startsWith("/admin/proof")).length >= 3, 10_000, "the impostor challenged again");
    await h.rt.publisher.publishAll();
    for (const listener of [impostor, relay]) {
      assert.deepEqual(
        listener.requests.filter((r) => r.authorization !== undefined),
        [],
        "no Authorization header ever reached it",
      );
      assert.ok(
        listener.requests.every((r) => r.path === "/health" || r.path.startsWith("/admin/proof?nonce=")),
        JSON.stringify(listener.requests.slice(0, 5)),
      );
    }
    for (const lbId of ["lb-us", "lb-eu"]) {
      const peers = (await latestConfig(h, lbId))?.peers.map((p) => p.id) ?? [];
      for (const impostorId of ["lb-impostor", "lb-relay", "lb-twin"]) assert.ok(!peers.includes(impostorId), `${impostorId} is not a peer of ${lbId}`);
    }
    const views = new Map((await listLbs(h.rt)).map((lb) => [lb.name, lb.credential]));
    assert.match(views.get("lb-impostor")?.error ?? "", /not a Meridian LB|lbProof/);
    assert.match(views.get("lb-relay")?.error ?? "", /is "lb-us", not "lb-relay"/);
    assert.match(views.get("lb-twin")?.error ?? "", /is "lb-us", not "lb-twin"/);
    assert.ok(
      real.us!.authorizations.every((a) => a === `Bearer ${tokens.us}`),
      "lb-twin's token never reached lb-us's URL",
    );
  });

  test("a newly issued token leaves the LB unmanaged until it holds it; then the console retires the old one on it", async () => {
    const issued = await issueLbToken(h.rt, OPERATOR, { id: "lb-eu" });
    assert.notEqual(issued.token, tokens.eu);
    await waitFor(
      async () => (await listLbs(h.rt)).find((lb) => lb.id === "lb-eu")?.credential.error?.includes("does not hold token"),
      10_000,
      "the proof to fail",
    );
    assert.ok(
      real.eu!.authorizations.every((a) => a !== `Bearer ${issued.token}`),
      "the new token is not sent before the LB proves it",
    );
    // The operator restarts lb-eu with the new token; its credentials file still has the old one.
    real.eu!.tokens = [issued.token, tokens.eu!];
    await waitFor(
      // The LB drops the old token before the console hears back and audits it: wait for both.
      async () =>
        real.eu!.tokens.length === 1 &&
        (await listLbs(h.rt)).find((lb) => lb.id === "lb-eu")?.credential.proven &&
        (await listAudit(h.rt, { limit: 200 })).some((row) => row.action === "lb.token.retire" && row.target === "lb:lb-eu"),
      10_000,
      "the LB proven again and its old token retired (and audited)",
    );
    await waitFor(async () => (await latestConfig(h, "lb-us"))?.peers.some((p) => p.id === "lb-eu"), 10_000, "lb-eu a peer again");
    assert.deepEqual(real.eu!.tokens, [issued.token]);
    const rows: LbTokenRow[] = await lbTokenRows(h.rt.store, "lb-eu");
    assert.deepEqual(
      rows.map((r) => [r.state, r.keyId]),
      [["current", issued.keyId]],
    );
    const actions = (await listAudit(h.rt, { limit: 200 })).map((row) => [row.action, row.target]);
    assert.ok(
      actions.some(([action, target]) => action === "lb.token.issue" && target === "lb:lb-eu"),
      "the issue is audited",
    );
    assert.ok(
      actions.some(([action, target]) => action === "lb.token.retire" && target === "lb:lb-eu"),
      "the retirement is audited",
    );
    const audited = JSON.stringify(await listAudit(h.rt, { limit: 500 }));
    for (const token of [...Object.values(tokens), issued.token]) assert.ok(!audited.includes(token), "no token in the audit log");
  });
});
