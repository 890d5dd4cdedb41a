// LB credentials over HTTP (issue 13 item 13): the challenge answers with proofs and no secret, a
// peer's read-only credential reads GET /admin/peer and nothing else (refusals counted and logged),
// and a token rotation — install the next token, move the peers over, retire the old one — keeps
// client traffic and peer polls going, and survives a restart with the old token in the environment.
import { strict as assert } from "node:assert";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { after, before, test } from "node:test";
import { pino, type Logger } from "pino";
import { request } from "undici";
import { LB_CREDENTIALS_UPDATE_SCHEMA, type LbConfigInput, type LbState } from "@meridian/protocol";
import { deriveLbKey, generateLbToken, lbKeyId, newNonce, peerCredentialHash, verifyProof } from "@meridian/protocol/credentials";
import { parsePrometheusText, type RunningProxy } from "../src/index";
import { chatBody, lbConfig, post, startEngine, startLb, waitFor, type Engine } from "./helpers";

let engine: Engine;
let dir: string;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), "meridian-credentials-test-"));
  engine = await startEngine("us-1", "us-ashburn");
});
after(async () => {
  await engine?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function call(lb: RunningProxy, method: string, path: string, bearer: string | null, body?: unknown) {
  const response = await request(`${lb.url}${path}`, {
    method: method as "GET",
    headers: { ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.body.text();
  return { status: response.statusCode, text, json: text.startsWith("{") ? (JSON.parse(text) as Record<string, unknown>) : null };
}

/** The refusals counted so far, by surface/reason; every series the LB records starts at 0. */
async function refusals(lb: RunningProxy): Promise<Record<string, number>> {
  const text = await (await request(`${lb.url}/metrics`)).body.text();
  const out: Record<string, number> = {};
  const series = parsePrometheusText(text).samples.filter((sample) => sample.name === "meridian_lb_auth_refusals_total");
  assert.deepEqual(series.map((s) => `${s.labels.surface}/${s.labels.reason}`).sort(), [
    "admin/invalid",
    "admin/missing",
    "client/invalid",
    "client/missing",
    "metrics/invalid",
    "metrics/missing",
    "peer/forbidden",
  ]);
  for (const sample of series) if (sample.value > 0) out[`${sample.labels.surface}/${sample.labels.reason}`] = sample.value;
  return out;
}

function capturingLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n")) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: "warn" }, sink) as Logger, lines };
}

test("the challenge answers a proof per token and gives away no secret", async () => {
  const token = generateLbToken();
  const lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]), { token });
  try {
    const nonce = newNonce();
    const answer = await call(lb, "GET", `/admin/proof?nonce=${nonce}`, null);
    assert.equal(answer.status, 200);
    const proofs = answer.json?.proofs as { keyId: string; mac: string }[];
    assert.equal(proofs.length, 1);
    assert.equal(proofs[0]?.keyId, lbKeyId(token));
    assert.ok(verifyProof(token, "lb-us", nonce, proofs[0]!.mac));
    const material = deriveLbKey(token);
    for (const secret of [token, material.peerCredential, material.proofKey.toString("base64url")]) assert.ok(!answer.text.includes(secret));
    assert.equal((await call(lb, "GET", "/admin/proof?nonce=short", null)).status, 400);
  } finally {
    await lb.close();
  }
});

test("a peer credential reads GET /admin/peer and cannot change anything; refusals are counted and logged", async () => {
  const token = generateLbToken();
  const peerToken = generateLbToken();
  const peerCredential = deriveLbKey(peerToken).peerCredential;
  const { logger, lines } = capturingLogger();
  const config = lbConfig("lb-us", "us-ashburn", [engine], {
    peers: [{ id: "lb-eu", url: "http://127.0.0.1:9", region: "eu-frankfurt", credentialHashes: [peerCredentialHash(peerToken)] }],
  });
  const lb = await startLb(config, { token, logger });
  try {
    assert.equal((await call(lb, "GET", "/admin/peer?snapshot=8", peerCredential)).status, 200);
    const attempts: [string, string, unknown?][] = [
      ["PUT", "/admin/config", { ...config, version: 9, weights: { rtt: 9, queue: 9 } }],
      ["POST", "/admin/flush"],
      ["POST", "/admin/credentials", { schema: LB_CREDENTIALS_UPDATE_SCHEMA, install: generateLbToken() }],
      ["GET", "/admin/state"],
      ["GET", "/admin/config"],
      ["GET", "/admin/telemetry?since=0"],
    ];
    for (const [method, path, body] of attempts) assert.equal((await call(lb, method, path, peerCredential, body)).status, 403, `${method} ${path}`);
    assert.equal((await call(lb, "GET", "/admin/state", null)).status, 401);
    assert.equal((await call(lb, "GET", "/admin/state", generateLbToken())).status, 401);
    assert.equal((await call(lb, "GET", "/admin/peer", deriveLbKey(generateLbToken()).peerCredential)).status, 401, "an unknown LB's credential");
    // With client keys required, the peer's credential admits a request it forwards (hop 1) for a
    // client that presented a key there, no other.
    await call(lb, "PUT", "/admin/config", token, { ...config, version: 2, clientAuth: { required: true } });
    const forwarded = await post(`${lb.url}/v1/chat/completions`, chatBody("forwarded"), {
      authorization: `Bearer ${peerCredential}`,
      "x-meridian-hop": "1",
      "x-meridian-client-keyed": "1",
    });
    assert.equal(forwarded.status, 200, forwarded.text);
    const keyless = { authorization: `Bearer ${peerCredential}`, "x-meridian-hop": "1" };
    // Refused with a 503 the forwarding LB moves on (a 401 would reach a client needing no key at home).
    const keylessForward = await post(`${lb.url}/v1/chat/completions`, chatBody("forwarded, keyless"), keyless);
    assert.equal(keylessForward.status, 503);
    assert.equal(JSON.parse(keylessForward.text).error.code, "client_key_required_here");
    assert.equal((await post(`${lb.url}/v1/chat/completions`, chatBody("not forwarded"), { authorization: `Bearer ${peerCredential}` })).status, 401);
    // The console's token still does everything, and nothing the peer tried took effect.
    const config2 = (await call(lb, "GET", "/admin/config", token)).json as { version: number; weights: { rtt: number } };
    assert.equal(config2.version, 2);
    assert.notEqual(config2.weights.rtt, 9);
    assert.deepEqual(await refusals(lb), {
      "peer/forbidden": attempts.length,
      "admin/missing": 1,
      "admin/invalid": 2,
      "client/invalid": 1,
      "client/missing": 1,
    });
    const logged = lines.filter((line) => line.msg === "refused a request's credential");
    assert.ok(logged.some((line) => line.surface === "peer" && line.peer === "lb-eu" && line.address === "127.0.0.1"));
    // Six peer refusals from one address in one window are one log line, not six.
    assert.equal(logged.filter((line) => line.surface === "peer").length, 1);
  } finally {
    await lb.close();
  }
});

test("two LBs told about each other a moment apart: the first polls the other only after the interval, so no poll is refused", async () => {
  // What the console does when an LB proves its token: every LB gets a config listing it, one push
  // after another. lb-us takes its config first; had it polled lb-eu at once, lb-eu (not yet told
  // about lb-us) would refuse lb-us's credential, and both would log a warning.
  const usToken = generateLbToken();
  const euToken = generateLbToken();
  const settings = { peerPollIntervalMs: 2_000 };
  const usLog = capturingLogger();
  const euLog = capturingLogger();
  const us = await startLb(lbConfig("lb-us", "us-ashburn", [engine]), { token: usToken, settings, logger: usLog.logger });
  const eu = await startLb(lbConfig("lb-eu", "eu-frankfurt", [engine]), { token: euToken, settings, logger: euLog.logger });
  try {
    const peer = (id: string, lb: RunningProxy, region: string, token: string) => ({ id, url: lb.url, region, credentialHashes: [peerCredentialHash(token)] });
    const usConfig = { ...lbConfig("lb-us", "us-ashburn", [engine]), version: 2, peers: [peer("lb-eu", eu, "eu-frankfurt", euToken)] };
    const euConfig = { ...lbConfig("lb-eu", "eu-frankfurt", [engine]), version: 2, peers: [peer("lb-us", us, "us-ashburn", usToken)] };
    assert.equal((await call(us, "PUT", "/admin/config", usToken, usConfig)).status, 200);
    assert.equal((await call(eu, "PUT", "/admin/config", euToken, euConfig)).status, 200);
    const peerHealthy = async (lb: RunningProxy, token: string) =>
      ((await call(lb, "GET", "/admin/state", token)).json as unknown as LbState).peers[0]?.healthy === true;
    await waitFor("each LB polled the other", async () => ((await peerHealthy(us, usToken)) && (await peerHealthy(eu, euToken))) || undefined, 10_000);
    assert.deepEqual(await refusals(eu), {}, "lb-eu refused no poll");
    assert.deepEqual(await refusals(us), {}, "lb-us refused no poll");
    assert.deepEqual([...usLog.lines, ...euLog.lines], [], "no warning on either side");
  } finally {
    await us.close();
    await eu.close();
  }
});

test("a token rotation keeps client traffic and peer polls going, and a restart keeps the rotated token", async () => {
  const oldToken = generateLbToken();
  const newToken = generateLbToken();
  const euToken = generateLbToken();
  const stateFile = join(dir, "lb-us.state.json");
  let usConfig: LbConfigInput = lbConfig("lb-us", "us-ashburn", [engine]);
  let euConfig: LbConfigInput = lbConfig("lb-eu", "eu-frankfurt", [engine]);
  let us = await startLb(usConfig, { token: oldToken, settings: { stateFile } });
  const eu = await startLb(euConfig, { token: euToken });
  const push = async (lb: RunningProxy, token: string, config: LbConfigInput) =>
    assert.equal((await call(lb, "PUT", "/admin/config", token, config)).status, 200);
  const euSees = (hashes: string[]) => ({ id: "lb-us", url: us.url, region: "us-ashburn", credentialHashes: hashes });
  try {
    usConfig = { ...usConfig, version: 2, peers: [{ id: "lb-eu", url: eu.url, region: "eu-frankfurt", credentialHashes: [peerCredentialHash(euToken)] }] };
    euConfig = { ...euConfig, version: 2, peers: [euSees([peerCredentialHash(oldToken)])] };
    await push(us, oldToken, usConfig);
    await push(eu, euToken, euConfig);
    const euPeerHealthy = async () => ((await call(eu, "GET", "/admin/state", euToken)).json as unknown as LbState).peers[0]?.healthy === true;
    await waitFor("lb-eu polls lb-us", async () => (await euPeerHealthy()) || undefined);

    let stop = false;
    const statuses: number[] = [];
    const traffic = (async () => {
      for (let i = 0; !stop; i++) statuses.push((await post(`${us.url}/v1/chat/completions`, chatBody(`during rotation ${i}`))).status);
    })();

    // 1. The console installs the next token, authenticated with the current one.
    const installed = await call(us, "POST", "/admin/credentials", oldToken, { schema: LB_CREDENTIALS_UPDATE_SCHEMA, install: newToken });
    assert.equal(installed.status, 200);
    assert.deepEqual(installed.json?.keyIds, [lbKeyId(newToken), lbKeyId(oldToken)]);
    assert.equal((await call(us, "GET", "/admin/state", oldToken)).status, 200, "the old token still works");
    assert.equal((await call(us, "GET", "/admin/state", newToken)).status, 200, "the new token works");
    // lb-us now presents its newest peer credential; lb-eu knows only the old one, so lb-us falls back.
    await us.balancer.pollPeersNow();
    // 2. The peers learn both credentials, then 3. the old token is retired with the new one.
    euConfig = { ...euConfig, version: 3, peers: [euSees([peerCredentialHash(newToken), peerCredentialHash(oldToken)])] };
    await push(eu, euToken, euConfig);
    const retired = await call(us, "POST", "/admin/credentials", newToken, { schema: LB_CREDENTIALS_UPDATE_SCHEMA, retire: [lbKeyId(oldToken)] });
    assert.deepEqual(retired.json?.keyIds, [lbKeyId(newToken)]);
    euConfig = { ...euConfig, version: 4, peers: [euSees([peerCredentialHash(newToken)])] };
    await push(eu, euToken, euConfig);
    assert.equal((await call(us, "GET", "/admin/state", oldToken)).status, 401, "the retired token is refused");
    const lastToken = (await call(us, "POST", "/admin/credentials", newToken, { schema: LB_CREDENTIALS_UPDATE_SCHEMA, retire: [lbKeyId(newToken)] })).json;
    assert.equal((lastToken?.error as { code?: string })?.code, "last_token");

    await waitFor("traffic during the rotation", () => statuses.length >= 20 || undefined, 20_000);
    stop = true;
    await traffic;
    assert.deepEqual([...new Set(statuses)], [200], "every request during the rotation was served");
    // lb-eu refused lb-us's new credential only while it did not know it: from now on no poll is refused.
    const refusedBefore = await refusals(eu);
    assert.ok((refusedBefore["admin/invalid"] ?? 0) >= 1);
    await us.balancer.pollPeersNow();
    await us.balancer.pollPeersNow();
    assert.deepEqual(await refusals(eu), refusedBefore);
    const usState = (await call(us, "GET", "/admin/state", newToken)).json as unknown as LbState;
    assert.equal(usState.peers[0]?.healthy, true);
    assert.equal(await euPeerHealthy(), true);

    // A restart with the old token still in the environment keeps the rotated one.
    await us.close();
    us = await startLb(usConfig, { token: oldToken, settings: { stateFile } });
    assert.equal((await call(us, "GET", "/admin/state", oldToken)).status, 401);
    assert.equal((await call(us, "GET", "/admin/state", newToken)).status, 200);
  } finally {
    await us.close();
    await eu.close();
  }
});

test("a token install or retirement the LB could not save answers 500 credentials_not_saved, and the retry saves it", async () => {
  const token = generateLbToken();
  const next = generateLbToken();
  const file = join(dir, "unsaved.credentials.json");
  const { logger } = capturingLogger();
  let lb = await startLb(lbConfig("lb-us", "us-ashburn", []), { token, logger, settings: { credentialsFile: file } });
  try {
    // The write fails: its temporary file's path is taken by a directory (a full or read-only disk alike).
    const blocker = `${file}.${process.pid}.tmp`;
    mkdirSync(blocker);
    const install = () => call(lb, "POST", "/admin/credentials", token, { schema: LB_CREDENTIALS_UPDATE_SCHEMA, install: next });
    const first = await install();
    assert.equal(first.status, 500, "the disk failed, not the token: the console retries a 5xx");
    assert.equal((first.json?.error as { code?: string })?.code, "credentials_not_saved");
    assert.equal((await call(lb, "GET", "/admin/state", next)).status, 401, "an unsaved token is not held");
    assert.equal((await install()).status, 500, "the retry is not acknowledged while the save still fails");
    const retire = () => call(lb, "POST", "/admin/credentials", next, { schema: LB_CREDENTIALS_UPDATE_SCHEMA, retire: [lbKeyId(token)] });
    rmSync(blocker, { recursive: true });
    assert.equal((await install()).status, 200);
    mkdirSync(blocker);
    assert.equal((await retire()).status, 500);
    assert.equal((await call(lb, "GET", "/admin/state", token)).status, 200, "an unsaved retirement leaves the token working");
    rmSync(blocker, { recursive: true });
    assert.equal((await retire()).status, 200);

    // A restart (the old token still in the environment) holds exactly what the console was told.
    await lb.close();
    lb = await startLb(lbConfig("lb-us", "us-ashburn", []), { token, logger, settings: { credentialsFile: file } });
    assert.equal((await call(lb, "GET", "/admin/state", next)).status, 200, "the installed token survived the restart");
    assert.equal((await call(lb, "GET", "/admin/state", token)).status, 401, "the retired token stayed retired");
    const badToken = await call(lb, "POST", "/admin/credentials", next, { schema: LB_CREDENTIALS_UPDATE_SCHEMA, install: "mlt_short" });
    assert.equal(badToken.status, 400, "a malformed token is still the caller's error");
  } finally {
    await lb.close();
  }
});
