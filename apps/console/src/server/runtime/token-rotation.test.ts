// A token rotation from the console against a real meridian-proxy in front of a simulated engine,
// with clients sending all along: the console installs the next token, switches to it, retires the
// old one after the grace period, keeps managing the LB, and no client request fails (issue 13
// item 13, "rotation keeps serving"). And a keeper deposed and elected again while an LB call is in
// flight carries the rotation through once. And an operator who issues a new token while the install
// is in flight keeps it: the late install activates nothing (it used to demote the new token, leaving
// the LB with no current token, no config pushes and nothing to repair it).
import { strict as assert } from "node:assert";
import { Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { request } from "undici";
import { startProxy, type RunningProxy } from "@meridian/proxy";
import { startEngineServer, type EngineServer } from "@meridian/sim";
import { generateLbToken, lbKeyId, newNonce } from "@meridian/protocol/credentials";
import { listAudit } from "../services/audit";
import { createLb, listLbs, setPolicy } from "../services/lbs";
import { issueLbToken, rotateLbToken } from "../services/lb-tokens";
import { createRegion } from "../services/regions";
import { createReplica } from "../services/replicas";
import { freePort } from "../testing/free-port";
import { createHarness, OPERATOR, waitFor, type Harness } from "../testing/harness";
import { CredentialKeeper } from "./credential-keeper";
import { LbProofBook } from "./lb-proofs";
import { lbTokenRows } from "./lb-token-rows";

const MODEL = "meridian-sim-8b";

describe("token rotation against a real LB", () => {
  let h: Harness;
  let engine: EngineServer;
  let lb: RunningProxy;
  let firstToken: string;

  before(async () => {
    h = await createHarness({ newLbToken: generateLbToken, healthIntervalMs: 100, tokenGraceMs: 300 });
    engine = await startEngineServer({
      port: 0,
      id: "us-1",
      region: "us-ashburn",
      model: MODEL,
      dialect: "sglang",
      rttMatrix: { "us-ashburn": { "us-ashburn": 1 } },
    });
    const port = await freePort();
    await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
    firstToken = (await createLb(h.rt, OPERATOR, { name: "lb-us", url: `http://127.0.0.1:${port}`, region: "us-ashburn" }, "lb-us")).token;
    await createReplica(h.rt, OPERATOR, { name: "us-1", url: engine.url, region: "us-ashburn", engine: "sglang", model: MODEL, homeLbId: "lb-us" }, "us-1");
    // The operator starts the LB with the token the console showed once.
    lb = await startProxy({
      config: { schema: "meridian.lb-config/1", version: 0, lbId: "lb-us", region: "us-ashburn" },
      settings: { port, host: "127.0.0.1", warmupTimeoutMs: 0 },
      token: firstToken,
      logger: pino({ level: "silent" }),
    });
    await h.rt.start();
    await waitFor(
      async () => lb.balancer.config.replicas.length === 1 && (await listLbs(h.rt))[0]?.credential.proven,
      10_000,
      "the LB configured by the console",
    );
  });
  after(async () => {
    await h.close();
    await lb?.close();
    await engine?.close();
  });

  test("the console rotates the LB's token while clients are served", async () => {
    let stop = false;
    const statuses: number[] = [];
    const traffic = (async () => {
      for (let i = 0; !stop; i++) {
        const res = await request(`${lb.url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: `hello ${i}` }], max_tokens: 4 }),
        });
        await res.body.dump();
        statuses.push(res.statusCode);
      }
    })();
    const { keyId } = await rotateLbToken(h.rt, OPERATOR, { id: "lb-us" });
    await waitFor(
      async () => {
        const credential = (await listLbs(h.rt))[0]?.credential;
        return credential?.keyId === keyId && credential.retiringKeyId === null && credential.proven;
      },
      15_000,
      "the rotation finished (activated, the old token retired)",
    );
    // The LB now holds only the new token, and the console still manages it with it.
    const proof = (await (await request(`${lb.url}/admin/proof?nonce=${newNonce()}`)).body.json()) as { proofs: { keyId: string }[] };
    assert.deepEqual(
      proof.proofs.map((p) => p.keyId),
      [keyId],
    );
    assert.notEqual(keyId, lbKeyId(firstToken));
    const oldRefused = await request(`${lb.url}/admin/state`, { headers: { authorization: `Bearer ${firstToken}` } });
    await oldRefused.body.dump();
    assert.equal(oldRefused.statusCode, 401);
    await setPolicy(h.rt, OPERATOR, { id: "lb-us", policy: "least-load", crossRegion: "direct" });
    await waitFor(() => lb.balancer.config.policy === "least-load", 10_000, "a config pushed with the new token");
    await waitFor(() => statuses.length >= 10, 15_000, "client requests");
    stop = true;
    await traffic;
    assert.deepEqual([...new Set(statuses)], [200], "no client request failed during the rotation");
    const actions = (await listAudit(h.rt, { target: "lb:lb-us", limit: 50 })).map((row) => `${row.actor} ${row.action}`);
    for (const expected of ["admin lb.token.rotate", "system:credentials lb.token.activate", "system:credentials lb.token.retire"]) {
      assert.ok(actions.includes(expected), `${expected} in ${actions.join(", ")}`);
    }
  });
});

/** One LB ("lb-us", at an address where nothing listens) whose rotation to its next token is
 * pending: the keeper's tests drive the install themselves. */
async function lbWithPendingRotation(h: Harness): Promise<{ first: string; next: string }> {
  await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
  const { keyId: first } = await createLb(h.rt, OPERATOR, { name: "lb-us", url: "http://127.0.0.1:9", region: "us-ashburn" }, "lb-us");
  const { keyId: next } = await rotateLbToken(h.rt, OPERATOR, { id: "lb-us" });
  return { first, next };
}

describe("a credential keeper stopped and started while an LB call is in flight", () => {
  let h: Harness;
  let keeper: CredentialKeeper | null = null;
  after(async () => {
    keeper?.stop();
    await h?.close();
  });

  test("the call of the stopped loop is ignored, and the rotation is carried through once", async () => {
    h = await createHarness({ newLbToken: generateLbToken });
    const { first, next } = await lbWithPendingRotation(h);
    const errors: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split("\n")) {
          if (line.trim() && (JSON.parse(line) as { level: number }).level >= 50) errors.push(line);
        }
        done();
      },
    });
    // A slow LB: an install is answered when the test says so (holding both tokens); a retirement at once.
    const installs: (() => void)[] = [];
    const calls: string[] = [];
    keeper = new CredentialKeeper({
      store: h.rt.store,
      log: pino({ level: "info" }, sink),
      proofs: new LbProofBook(),
      publisher: { publishAll: async () => undefined },
      // No grace: once activated, the old token is retired on the next pass.
      graceMs: 0,
      intervalMs: 60_000,
      lbClient: {
        updateCredentials: (_lb, update) => {
          calls.push(update.install ? "install" : `retire ${update.retire?.join(",")}`);
          if (!update.install) return Promise.resolve({ keyIds: [next] });
          return new Promise((resolve) => installs.push(() => resolve({ keyIds: [next, first] })));
        },
      },
    });
    keeper.start();
    await waitFor(() => installs.length === 1, 5_000, "the first loop's install call");
    // Deposed and elected again (runtime.stopDuties, then startDuties) while that call is in flight.
    keeper.stop();
    keeper.start();
    await waitFor(() => installs.length === 2, 5_000, "the new loop's install call");
    for (const answer of installs) answer();
    await waitFor(async () => (await listAudit(h.rt, { action: "lb.token.retire" })).length > 0, 5_000, "the old token retired");

    const actions = (await listAudit(h.rt, { target: "lb:lb-us", action: "lb.token" })).map((row) => row.action).reverse();
    assert.deepEqual(actions, ["lb.token.issue", "lb.token.rotate", "lb.token.activate", "lb.token.retire"], "each step once");
    assert.deepEqual(
      (await lbTokenRows(h.rt.store, "lb-us")).map((row) => [row.keyId, row.state]),
      [[next, "current"]],
    );
    assert.deepEqual(calls, ["install", "install", `retire ${first}`]);
    assert.deepEqual(errors, []);
  });
});

describe("an operator who issues a new token while a rotation's install is in flight", () => {
  let h: Harness;
  let keeper: CredentialKeeper | null = null;
  after(async () => {
    keeper?.stop();
    await h?.close();
  });

  test("a token issued while a rotation's install is in flight stays current; the late install activates nothing", async () => {
    h = await createHarness({ newLbToken: generateLbToken });
    const { first, next } = await lbWithPendingRotation(h);
    const installs: (() => void)[] = [];
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    keeper = new CredentialKeeper({
      store: h.rt.store,
      log: pino({ level: "info" }, sink),
      proofs: new LbProofBook(),
      publisher: { publishAll: async () => undefined },
      graceMs: 60_000,
      intervalMs: 60_000,
      lbClient: {
        updateCredentials: (_lb, update) => {
          if (!update.install) return Promise.resolve({ keyIds: [next] });
          // A slow LB: the install is answered when the test says so.
          return new Promise((resolve) => installs.push(() => resolve({ keyIds: [next, first] })));
        },
      },
    });
    keeper.start();
    await waitFor(() => installs.length === 1, 5_000, "the install call");
    // Meanwhile the operator gives up on the rotation and issues a fresh token.
    const { keyId: issued } = await issueLbToken(h.rt, OPERATOR, { id: "lb-us" });
    installs[0]?.();
    await waitFor(() => lines.some((line) => line.includes("nothing activated")), 5_000, "the late install handled");
    const rows = (await lbTokenRows(h.rt.store, "lb-us")).map((row) => [row.keyId, row.state]);
    assert.deepEqual(rows, [[issued, "current"]], `the issued token ${issued} stays current`);
    assert.equal((await listAudit(h.rt, { action: "lb.token.activate" })).length, 0, "no activation audited");
  });
});

describe("the pass after a rotation's retirement", () => {
  let h: Harness;
  let keeper: CredentialKeeper | null = null;
  after(async () => {
    keeper?.stop();
    await h?.close();
  });

  test("the previous token is retired once, and never audited as a token this console did not issue", async () => {
    h = await createHarness({ newLbToken: generateLbToken });
    const { first, next } = await lbWithPendingRotation(h);
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const proofs = new LbProofBook();
    const calls: string[] = [];
    let challenged = false;
    keeper = new CredentialKeeper({
      store: h.rt.store,
      log: pino({ level: "info" }, sink),
      proofs,
      publisher: { publishAll: async () => undefined },
      graceMs: 0,
      intervalMs: 60_000,
      lbClient: {
        updateCredentials: async (_lb, update) => {
          calls.push(update.install ? "install" : `retire ${update.retire?.join(",")}`);
          if (update.install) return { keyIds: [next, first] };
          // Before the retirement a health probe challenged the LB, which then proved the new token
          // and held both (with the defaults, a probe re-challenges well within the grace period).
          if (!challenged) {
            challenged = true;
            const now = Date.now();
            proofs.record("lb-us", {
              adminBase: "http://127.0.0.1:9",
              provenKeyId: next,
              provenAt: now,
              held: [next, first],
              refused: false,
              error: null,
              checkedAt: now,
            });
          }
          return { keyIds: [next] };
        },
      },
    });
    keeper.start();
    await waitFor(async () => (await listAudit(h.rt, { action: "lb.token.retire" })).length > 0, 5_000, "the old token retired");
    // One more full pass, as the next tick would run it.
    await keeper.tick();

    assert.deepEqual(calls, ["install", `retire ${first}`], "the LB is asked to retire the old token once");
    const retires = await listAudit(h.rt, { action: "lb.token.retire" });
    assert.deepEqual(
      retires.map((row) => row.after),
      [null],
      "one retirement audited, as the end of the rotation",
    );
    assert.equal(lines.filter((line) => line.includes("did not issue")).length, 0, "nothing logged as a foreign token");
  });
});
