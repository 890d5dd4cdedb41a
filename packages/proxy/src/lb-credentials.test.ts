// The LB's token set: derived material only on disk, rotation (install, retire), a retired token
// that comes back through the environment stays retired, and the admin check compares every key.
import { strict as assert } from "node:assert";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { deriveLbKey, digestsEqual, generateLbToken, lbKeyId, newNonce, sha256, verifyProof } from "@meridian/protocol/credentials";
import { LbCredentials } from "./lb-credentials";

const dir = mkdtempSync(join(tmpdir(), "meridian-lb-credentials-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("the credentials file holds derived material only, mode 0600, and survives a restart", () => {
  const file = join(dir, "a.credentials.json");
  const first = generateLbToken();
  const { credentials, bootstrap } = LbCredentials.load({ file, bootstrapToken: first, now: 1 });
  assert.equal(bootstrap, "added");
  const text = readFileSync(file, "utf8");
  assert.ok(!text.includes(first), "the token itself is not stored");
  assert.ok(text.includes(deriveLbKey(first).adminVerifier.toString("hex")));
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.ok(credentials.isAdmin(sha256(first)));
  const reloaded = LbCredentials.load({ file, bootstrapToken: null, now: 2 }).credentials;
  assert.deepEqual(reloaded.keyIds(), [lbKeyId(first)]);
  assert.ok(reloaded.isAdmin(sha256(first)));
});

test("rotation: both tokens work until the old one is retired; a retired token in the environment stays retired", () => {
  const file = join(dir, "b.credentials.json");
  const old = generateLbToken();
  const next = generateLbToken();
  const { credentials } = LbCredentials.load({ file, bootstrapToken: old, now: 1 });
  assert.equal(credentials.install(next, 2), "installed");
  assert.equal(credentials.install(next, 3), "already-held");
  assert.deepEqual(credentials.keyIds(), [lbKeyId(next), lbKeyId(old)], "newest first");
  assert.ok(credentials.isAdmin(sha256(old)) && credentials.isAdmin(sha256(next)));
  assert.equal(credentials.peerCredentials()[0], deriveLbKey(next).peerCredential);
  assert.deepEqual(credentials.update(undefined, [lbKeyId(old)], 4), { ok: true, installed: false, retired: 1 });
  assert.equal(credentials.isAdmin(sha256(old)), false);
  assert.equal(credentials.install(old, 4), "retired");

  const restarted = LbCredentials.load({ file, bootstrapToken: old, now: 5 });
  assert.equal(restarted.bootstrap, "retired");
  assert.deepEqual(restarted.credentials.keyIds(), [lbKeyId(next)]);
});

test("proofs verify with the token, for this LB and this nonce only", () => {
  const token = generateLbToken();
  const { credentials } = LbCredentials.load({ file: null, bootstrapToken: token, now: 1 });
  const nonce = newNonce();
  const [proof] = credentials.prove("lb-us", nonce);
  assert.ok(proof);
  assert.ok(verifyProof(token, "lb-us", nonce, proof.mac));
  assert.equal(verifyProof(token, "lb-eu", nonce, proof.mac), false);
  assert.equal(verifyProof(token, "lb-us", newNonce(), proof.mac), false);
  assert.equal(verifyProof(generateLbToken(), "lb-us", nonce, proof.mac), false);
});

test("the admin check compares against every held key, with no early exit", () => {
  const tokens = [generateLbToken(), generateLbToken(), generateLbToken()];
  const { credentials } = LbCredentials.load({ file: null, bootstrapToken: tokens[0]!, now: 1 });
  credentials.install(tokens[1]!, 2);
  credentials.install(tokens[2]!, 3);
  for (const bearer of [tokens[2]!, tokens[0]!, "wrong"]) {
    let compared = 0;
    credentials.isAdmin(sha256(bearer), (a, b) => {
      compared += 1;
      return digestsEqual(a, b);
    });
    assert.equal(compared, 3, bearer);
  }
});

test("a malformed token is refused before anything is stored", () => {
  const { credentials } = LbCredentials.load({ file: null, bootstrapToken: null, now: 1 });
  assert.throws(() => credentials.install("mlt_short", 1), /not an LB token/);
  assert.equal(credentials.empty, true);
});

test("a credentials file cut short stops the LB with the file named and the way out", () => {
  const file = join(dir, "cut.credentials.json");
  LbCredentials.load({ file, bootstrapToken: generateLbToken(), now: 1 });
  writeFileSync(file, readFileSync(file, "utf8").slice(0, 60));
  assert.throws(
    () => LbCredentials.load({ file, bootstrapToken: null, now: 2 }),
    (error: Error) => error.message.includes(file) && /not valid JSON/.test(error.message) && /MERIDIAN_LB_TOKEN/.test(error.message),
  );
});

test("a boot token that finds the set full is reported as not held, not as retired", () => {
  const file = join(dir, "full.credentials.json");
  const { credentials } = LbCredentials.load({ file, bootstrapToken: generateLbToken(), now: 1 });
  for (let i = 0; i < 7; i++) assert.equal(credentials.install(generateLbToken(), 2 + i), "installed");
  const operators = generateLbToken();
  const again = LbCredentials.load({ file, bootstrapToken: operators, now: 20 });
  assert.equal(again.bootstrap, "full");
  assert.equal(again.credentials.isAdmin(sha256(operators)), false);
  assert.equal(again.credentials.keyIds().length, 8, "no held token was dropped for it");
});

test("a rewrite leaves mode 0600 even over a temporary file an earlier crash left, and no temporary file behind", () => {
  const sub = mkdtempSync(join(dir, "crash-"));
  const file = join(sub, "c.credentials.json");
  // What a crash between the write and the rename leaves: the temporary file, world-readable.
  writeFileSync(`${file}.${process.pid}.tmp`, "partial", { mode: 0o644 });
  const token = generateLbToken();
  LbCredentials.load({ file, bootstrapToken: token, now: 1 });
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.deepEqual(readdirSync(sub), ["c.credentials.json"]);
  assert.ok(LbCredentials.load({ file, bootstrapToken: null, now: 2 }).credentials.isAdmin(sha256(token)));
});

test("an update is judged whole: a refused one changes nothing, in memory or on disk", () => {
  const file = join(dir, "whole.credentials.json");
  const a = generateLbToken();
  const b = generateLbToken();
  const { credentials } = LbCredentials.load({ file, bootstrapToken: a, now: 1 });
  const before = readFileSync(file, "utf8");
  // Installing B while retiring A and B would leave no token: refused, and B is not held either.
  assert.deepEqual(credentials.update(b, [lbKeyId(a), lbKeyId(b)], 2), { ok: false, refused: "last_token" });
  assert.deepEqual(credentials.keyIds(), [lbKeyId(a)]);
  assert.equal(readFileSync(file, "utf8"), before);
  // Installing B while retiring A: one change, one write.
  assert.deepEqual(credentials.update(b, [lbKeyId(a)], 3), { ok: true, installed: true, retired: 1 });
  assert.deepEqual(LbCredentials.load({ file, bootstrapToken: null, now: 4 }).credentials.keyIds(), [lbKeyId(b)]);
  // A retired token cannot come back.
  assert.deepEqual(credentials.update(a, [], 5), { ok: false, refused: "token_retired" });
});

test("a full set takes a new token when the same update retires one", () => {
  const file = join(dir, "swap.credentials.json");
  const first = generateLbToken();
  const { credentials } = LbCredentials.load({ file, bootstrapToken: first, now: 1 });
  for (let i = 0; i < 7; i++) credentials.update(generateLbToken(), [], 2 + i);
  assert.equal(credentials.keyIds().length, 8);
  assert.deepEqual(credentials.update(generateLbToken(), [], 20), { ok: false, refused: "too_many_tokens" });
  const next = generateLbToken();
  assert.deepEqual(credentials.update(next, [lbKeyId(first)], 21), { ok: true, installed: true, retired: 1 });
  assert.equal(credentials.keyIds().length, 8);
  assert.ok(credentials.isAdmin(sha256(next)));
});
