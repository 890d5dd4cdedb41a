// Who reads the per-client-key series of GET /metrics, decided from the Authorization header alone:
// nothing at all is the ordinary (aggregate) scrape; the metrics token and the console's LB token read
// the client series; any other header, a peer LB's read-only credential included, is refused.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { parseLbConfig } from "@meridian/protocol";
import { deriveLbKey, generateLbToken, peerCredentialHash } from "@meridian/protocol/credentials";
import { LbCredentials } from "./lb-credentials";
import { metricsReader, metricsTokenDigest } from "./metrics-access";

const LB_TOKEN = generateLbToken();
const PEER_TOKEN = generateLbToken();
const METRICS_TOKEN = "prometheus-scrape-0123456789";
const config = parseLbConfig({
  schema: "meridian.lb-config/2",
  version: 1,
  lbId: "lb-us",
  region: "us-ashburn",
  replicas: [{ id: "r1", url: "http://127.0.0.1:9", region: "us-ashburn", model: "m" }],
  peers: [{ id: "lb-eu", url: "http://127.0.0.1:9", region: "eu-frankfurt", credentialHashes: [peerCredentialHash(PEER_TOKEN)] }],
});
const credentials = LbCredentials.load({ file: null, bootstrapToken: LB_TOKEN, now: 0 }).credentials;
const trust = { metricsTokenDigest: metricsTokenDigest(METRICS_TOKEN), credentials, config };

test("no Authorization header gets the aggregate series; the metrics token and the LB token get the client series", () => {
  assert.deepEqual(metricsReader(undefined, trust), { kind: "aggregate" });
  assert.deepEqual(metricsReader("", trust), { kind: "aggregate" });
  assert.deepEqual(metricsReader(`Bearer ${METRICS_TOKEN}`, trust), { kind: "clients" });
  assert.deepEqual(metricsReader(`bearer ${LB_TOKEN}`, trust), { kind: "clients" });
});

test("any other credential is refused: a guess, a peer LB's credential, a header without a bearer", () => {
  assert.deepEqual(metricsReader(`Bearer ${METRICS_TOKEN}x`, trust), { kind: "refused", reason: "invalid" });
  assert.deepEqual(metricsReader(`Bearer ${deriveLbKey(PEER_TOKEN).peerCredential}`, trust), { kind: "refused", reason: "invalid" });
  assert.deepEqual(metricsReader(`Basic ${METRICS_TOKEN}`, trust), { kind: "refused", reason: "missing" });
  // Without a metrics token configured, only the LB token reads the client series.
  const tokenless = { ...trust, metricsTokenDigest: metricsTokenDigest(null) };
  assert.deepEqual(metricsReader(`Bearer ${METRICS_TOKEN}`, tokenless), { kind: "refused", reason: "invalid" });
  assert.deepEqual(metricsReader(`Bearer ${LB_TOKEN}`, tokenless), { kind: "clients" });
});
