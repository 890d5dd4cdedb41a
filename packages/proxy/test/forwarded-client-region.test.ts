// A request a peer LB forwarded is recorded with its client's region (x-meridian-src-region, the
// forwarding LB's region), as the simulator records it; before, every live telemetry event said the
// client was in the receiving LB's region. The forwarding headers are a peer's word: an ordinary
// client's x-meridian-src-region and x-meridian-hop are ignored (before, a client sending hop 1 was
// never forwarded and was recorded as a forward). A peer's forward also names the LB it entered at.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import type { TelemetryEvent } from "@meridian/protocol";
import { deriveLbKey } from "@meridian/protocol/credentials";
import type { RunningProxy } from "../src/index";
import { chatBody, DEMO_ENGINE_PARAMS, lbConfig, peerEntry, post, startEngine, startLb, TOKEN, waitFor, type Engine } from "./helpers";

/** lb-us's peer credential: lb-eu lists its hash (peerEntry). */
const PEER_CREDENTIAL = deriveLbKey(TOKEN).peerCredential;

let engine: Engine;
let lbEu: RunningProxy;

before(async () => {
  engine = await startEngine("eu-1", "eu-frankfurt", { params: { ...DEMO_ENGINE_PARAMS, maxOutputTokens: 4 } });
  // lb-us is never polled here (nothing listens at its URL): only its forwards arrive.
  lbEu = await startLb(lbConfig("lb-eu", "eu-frankfurt", [engine], { peers: [peerEntry({ url: "http://127.0.0.1:9" }, "lb-us", "us-ashburn")] }));
});
after(async () => {
  await lbEu?.close();
  await engine?.close();
});

/** Posts to lb-eu and returns the telemetry event of that request. */
async function recorded(headers: Record<string, string>, text: string): Promise<TelemetryEvent> {
  const before = lbEu.balancer.telemetry.latestSeq;
  const result = await post(`${lbEu.url}/v1/chat/completions`, chatBody(text), headers);
  assert.equal(result.status, 200, result.text);
  return waitFor("the request's telemetry", () => lbEu.balancer.telemetry.since(before)[0]);
}

test("a peer's forward is recorded with its client's region and hop 1", async () => {
  const event = await recorded(
    { authorization: `Bearer ${PEER_CREDENTIAL}`, "x-meridian-hop": "1", "x-meridian-src-region": "us-ashburn", "x-meridian-entry-policy": "round-robin" },
    "forwarded from us",
  );
  assert.equal(event.clientRegion, "us-ashburn");
  assert.equal(event.hop, 1);
  // The LB it entered at, as its credential names it: a fleet tuner samples this event when that LB
  // is not one of its members (the tuner's eventRole).
  assert.equal(event.entryLbId, "lb-us");
  assert.equal(event.entryPolicy, "round-robin");
});

test("a peer's region that is not a header-safe id is ignored: the client counts as this LB's region", async () => {
  const event = await recorded({ authorization: `Bearer ${PEER_CREDENTIAL}`, "x-meridian-hop": "1", "x-meridian-src-region": "us ashburn" }, "bad region");
  assert.equal(event.clientRegion, "eu-frankfurt");
  assert.equal(event.hop, 1);
});

test("an ordinary client's forwarding headers are ignored: its own region, hop 0", async () => {
  const event = await recorded({ "x-meridian-hop": "1", "x-meridian-src-region": "ap-seoul", "x-meridian-entry-policy": "gorgo" }, "claims to be forwarded");
  assert.equal(event.clientRegion, "eu-frankfurt");
  assert.equal(event.hop, 0);
  assert.equal(event.entryLbId, undefined);
  assert.equal(event.entryPolicy, undefined);
});
