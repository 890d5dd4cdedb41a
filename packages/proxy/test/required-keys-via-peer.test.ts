// A region that requires client keys is not reached by keyless clients through a peer in a region
// that does not: the peer report says keys are required (PeerReport.clientKeysRequired), the
// forwarding LB keeps keyless requests off that peer, and the receiving LB admits a peer's forward
// only when the peer says its client presented a key. Before, lb-us forwarded keyless clients to
// lb-eu, which admitted anything a peer vouched for.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import type { LbState } from "@meridian/protocol";
import { generateClientKey, sha256Hex } from "@meridian/protocol/credentials";
import type { RunningProxy } from "../src/index";
import { adminGet, chatBody, DEMO_ENGINE_PARAMS, lbConfig, post, startEngine, startPeeredPair, waitFor, type Engine } from "./helpers";

const SLOW = { ...DEMO_ENGINE_PARAMS, maxRunning: 1, itlBaseMs: 20, maxOutputTokens: 80 };
const EU_KEY = generateClientKey("0123456789ab");

let usEngine: Engine;
let euEngine: Engine;
let lbUs: RunningProxy;
let lbEu: RunningProxy;

before(async () => {
  usEngine = await startEngine("us-1", "us-ashburn", { params: SLOW });
  euEngine = await startEngine("eu-1", "eu-frankfurt", { params: SLOW });
  // us-ashburn: keys not required. eu-frankfurt: keys required (one key, for eu's own clients).
  const usConfig = lbConfig("lb-us", "us-ashburn", [usEngine], { crossRegion: "via-peer", policy: "skylb" });
  const euConfig = lbConfig("lb-eu", "eu-frankfurt", [euEngine], {
    crossRegion: "via-peer",
    policy: "skylb",
    clientAuth: { required: true, keys: [{ id: "0123456789ab", name: "eu-team", region: "eu-frankfurt", sha256: sha256Hex(EU_KEY) }] },
  });
  [lbUs, lbEu] = await startPeeredPair(usConfig, euConfig);
});
after(async () => {
  await lbUs?.close();
  await lbEu?.close();
  await usEngine?.close();
  await euEngine?.close();
});

test("a keyless client never gets served by the keys-required region's replicas", async () => {
  // Direct: refused, as intended.
  const direct = await post(`${lbEu.url}/v1/chat/completions`, chatBody("no key, direct"));
  assert.equal(direct.status, 401);
  // Through the open region's LB, once its own replica is busy: keyless requests.
  const pending = [
    post(`${lbUs.url}/v1/chat/completions`, chatBody("keyless 1", { max_tokens: 80 })),
    post(`${lbUs.url}/v1/chat/completions`, chatBody("keyless 2", { max_tokens: 80 })),
  ];
  await waitFor("us replica full", async () => ((await adminGet<LbState>(lbUs, "/admin/state")).replicas.every((r) => r.full) ? true : undefined));
  const viaPeer = await post(`${lbUs.url}/v1/chat/completions`, chatBody("keyless, lands in eu"));
  await Promise.all(pending);
  const servedBy = `status ${viaPeer.status}, x-meridian-forwarded-to=${String(viaPeer.headers["x-meridian-forwarded-to"])}, x-meridian-replica=${String(viaPeer.headers["x-meridian-replica"])}`;
  assert.ok(
    !(viaPeer.status === 200 && viaPeer.headers["x-meridian-forwarded-to"] === "lb-eu"),
    `keyless request served by the keys-required region: ${servedBy}`,
  );
});
