// The credential keeper's rotation against an operator who issues a new token meanwhile: the LB's
// late answer to the install must not demote the token just issued (it did: the LB was left with no
// current token, no config pushes and no repair).
import { strict as assert } from "node:assert";
import { Writable } from "node:stream";
import { after, test } from "node:test";
import { pino } from "pino";
import { generateLbToken } from "@meridian/protocol/credentials";
import { listAudit } from "../services/audit";
import { createLb } from "../services/lbs";
import { issueLbToken, rotateLbToken } from "../services/lb-tokens";
import { createRegion } from "../services/regions";
import { createHarness, OPERATOR, waitFor, type Harness } from "../testing/harness";
import { CredentialKeeper } from "./credential-keeper";
import { LbProofBook } from "./lb-proofs";
import { lbTokenRows } from "./lb-token-rows";

let h: Harness;
let keeper: CredentialKeeper | null = null;
after(async () => {
  keeper?.stop();
  await h?.close();
});

test("a token issued while a rotation's install is in flight stays current; the late install activates nothing", async () => {
  h = await createHarness({ newLbToken: generateLbToken });
  await createRegion(h.rt, OPERATOR, { name: "us-ashburn" });
  const { keyId: first } = await createLb(h.rt, OPERATOR, { name: "lb-us", url: "http://127.0.0.1:9", region: "us-ashburn" }, "lb-us");
  const { keyId: next } = await rotateLbToken(h.rt, OPERATOR, { id: "lb-us" });
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
