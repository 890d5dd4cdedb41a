// The client key check: who a request is counted for, what goes upstream, and that every check does
// the same comparison work whatever the guess (constant time).
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { parseLbConfig, type LbConfig } from "@meridian/protocol";
import { deriveLbKey, digestsEqual, generateClientKey, peerCredentialHash, sha256Hex } from "@meridian/protocol/credentials";
import { checkClient } from "./client-keys";

const KEY = generateClientKey("0123456789ab");
const PEER_TOKEN = `mlt_${"p".repeat(43)}`;

function config(required: boolean): LbConfig {
  return parseLbConfig({
    schema: "meridian.lb-config/1",
    version: 1,
    lbId: "lb-us",
    region: "us",
    peers: [{ id: "lb-eu", url: "http://127.0.0.1:9", region: "eu", credentialHashes: [peerCredentialHash(PEER_TOKEN)] }],
    clientAuth: { required, keys: [{ id: "0123456789ab", name: "team-a", region: "us", sha256: sha256Hex(KEY) }] },
  });
}

test("with keys required: the key passes and is counted by id and name, and never goes upstream", () => {
  const check = checkClient(`Bearer ${KEY}`, 0, config(true));
  assert.ok(check.ok);
  assert.deepEqual(check.identity, { keyId: "0123456789ab", keyName: "team-a" });
  assert.equal(check.forwardAuthorization, null);
});

test("with keys required: missing, wrong, revoked-shaped and foreign bearers are 401 in OpenAI's shape", () => {
  const cases: [string | undefined, "missing" | "invalid"][] = [
    [undefined, "missing"],
    ["Basic abc", "missing"],
    [`Bearer ${KEY.slice(0, -1)}x`, "invalid"],
    [`Bearer ${generateClientKey("ffffffffffff")}`, "invalid"],
    ["Bearer sk-some-openai-key", "invalid"],
  ];
  for (const [header, reason] of cases) {
    const check = checkClient(header, 0, config(true));
    assert.equal(check.ok, false, String(header));
    if (check.ok) continue;
    assert.equal(check.reason, reason, String(header));
    assert.equal(check.error.status, 401);
    assert.equal(check.error.type, "invalid_request_error");
    assert.equal(check.error.code, "invalid_api_key");
    assert.ok(!check.error.message.includes(KEY.slice(20)), "the refusal never echoes a secret");
  }
});

test("a peer LB's credential admits only a forwarded request (hop 1); where keys are required, only one whose client had a key", () => {
  const peer = deriveLbKey(PEER_TOKEN).peerCredential;
  const forwarded = checkClient(`Bearer ${peer}`, 1, config(true), undefined, true);
  assert.ok(forwarded.ok);
  assert.deepEqual(forwarded.identity, { keyId: "peer", keyName: "lb-eu" });
  assert.equal(forwarded.forwardAuthorization, null);
  assert.equal(checkClient(`Bearer ${peer}`, 0, config(true), undefined, true).ok, false);
  // A peer in a region without the rule forwarding its keyless client (on a report from before this
  // LB required keys, or too old to send x-meridian-client-keyed): refused here, as the client would
  // be, with a 503 the forwarding LB moves on (lb-core redispatch.ts), never a 401 its client
  // (who needs no key at home) would get.
  const keyless = checkClient(`Bearer ${peer}`, 1, config(true));
  assert.equal(keyless.ok, false);
  assert.ok(!keyless.ok && keyless.error.status === 503 && keyless.error.code === "client_key_required_here");
  assert.equal(checkClient(`Bearer ${peer}`, 1, config(false)).ok, true, "without the rule, any forward is admitted");
});

test("without keys required: anonymous requests pass, an engine's own key goes through, Meridian credentials do not", () => {
  const anonymous = checkClient(undefined, 0, config(false));
  assert.ok(anonymous.ok);
  assert.equal(anonymous.identity.keyId, "anonymous");
  const engineKey = checkClient("Bearer sk-engine-key", 0, config(false));
  assert.ok(engineKey.ok);
  assert.equal(engineKey.forwardAuthorization, "Bearer sk-engine-key");
  const known = checkClient(`Bearer ${KEY}`, 0, config(false));
  assert.ok(known.ok);
  assert.equal(known.identity.keyName, "team-a");
  assert.equal(known.forwardAuthorization, null);
  const stale = checkClient(`Bearer ${generateClientKey("ffffffffffff")}`, 0, config(false));
  assert.ok(stale.ok);
  assert.equal(stale.identity.keyId, "anonymous");
  assert.equal(stale.forwardAuthorization, null);
  const peerOutsideForward = checkClient(`Bearer ${deriveLbKey(PEER_TOKEN).peerCredential}`, 0, config(false));
  assert.ok(peerOutsideForward.ok);
  assert.equal(peerOutsideForward.forwardAuthorization, null);
});

test("without keys required, a Meridian credential in any other form than `Bearer <token>` is not passed on either", () => {
  const basic = `Basic ${Buffer.from(`x:${PEER_TOKEN}`).toString("base64")}`;
  for (const authorization of [
    PEER_TOKEN,
    `Token ${PEER_TOKEN}`,
    `Bearer ${PEER_TOKEN} x`,
    `Bearer: ${KEY}`,
    KEY,
    `Basic x, Bearer ${KEY}`,
    `Token key="${KEY}"`,
    basic,
    `Token x, ${basic}`,
    // Wrapped in punctuation, as some clients and copy-pastes send them.
    `Bearer \u2039${PEER_TOKEN}>`,
    `Bearer [${PEER_TOKEN}]`,
    `Bearer+${PEER_TOKEN}`,
    `Bearer \u201c${KEY}\u201d`,
    `{${KEY}}`,
    `token/${KEY}`,
    `.${PEER_TOKEN}`,
    // Glued to its scheme, and Basic however it is written.
    `Bearer${PEER_TOKEN}`,
    `Bearer${KEY}`,
    `Basic: ${basic.slice(6)}`,
    `Basic=${basic.slice(6)}`,
    `Basic "${basic.slice(6)}"`,
    `Basic${basic.slice(6)}`,
  ]) {
    const check = checkClient(authorization, 0, config(false));
    assert.ok(check.ok, authorization);
    assert.equal(check.forwardAuthorization, null, authorization);
  }
  // An engine's own credential in whatever form the engine takes it still goes through, a JWT whose
  // signature starts with "mk_" too (its segments are one word with their dots).
  const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQyIn0.mk_" + "s".repeat(40);
  // A JWE's and a PASETO token's random segments may start like a prefix too.
  const jwe = `eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0..mk_${"i".repeat(13)}.mlt_${"c".repeat(60)}.mlp_${"t".repeat(18)}`;
  const paseto = `v4.local.mlt_${"p".repeat(120)}`;
  for (const authorization of ["sk-engine-key", "Token sk-engine-key", "Basic dXNlcjpwdw==", `Bearer ${jwt}`, jwt, `Bearer ${jwe}`, `Bearer ${paseto}`]) {
    assert.equal((checkClient(authorization, 0, config(false)) as { forwardAuthorization: string | null }).forwardAuthorization, authorization);
  }
});

test("constant time: every key-shaped guess costs exactly one comparison of two 32-byte digests", () => {
  const calls: [number, number][] = [];
  const spy = (a: Buffer, b: Buffer) => {
    calls.push([a.length, b.length]);
    return digestsEqual(a, b);
  };
  const guesses = [
    KEY,
    `${KEY.slice(0, 16)}${"A".repeat(KEY.length - 16)}`, // right id, wrong from the first secret character
    `${KEY.slice(0, -1)}A`, // right id, wrong only in the last character
    generateClientKey("ffffffffffff"), // unknown id
  ];
  for (const guess of guesses) {
    calls.length = 0;
    checkClient(`Bearer ${guess}`, 0, config(true), spy);
    assert.deepEqual(calls, [[32, 32]], guess);
  }
  // Any other bearer, whatever its length, is compared as a digest against every peer verifier.
  for (const guess of ["x", "y".repeat(5_000)]) {
    calls.length = 0;
    checkClient(`Bearer ${guess}`, 0, config(true), spy);
    assert.deepEqual(calls, [[32, 32]]);
  }
});
