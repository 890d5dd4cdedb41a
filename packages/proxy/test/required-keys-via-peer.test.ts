// A region that requires client keys is not reached by keyless clients through a peer in a region
// that does not: the peer report says keys are required (PeerReport.clientKeysRequired), the
// forwarding LB keeps keyless requests off that peer, and the receiving LB admits a peer's forward
// only when the peer says its client presented a key. Before, lb-us forwarded keyless clients to
// lb-eu, which admitted anything a peer vouched for.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { generateClientKey, sha256Hex } from "@meridian/protocol/credentials";
import type { RunningProxy } from "../src/index";
import { chatBody, post } from "./helpers";
import { fillReplicas, startViaPeerRegions, type ViaPeerRegions } from "./via-peer-regions";

const EU_KEY = generateClientKey("0123456789ab");

let regions: ViaPeerRegions;
let lbUs: RunningProxy;
let lbEu: RunningProxy;

before(async () => {
  // us-ashburn: keys not required. eu-frankfurt: keys required (one key, for eu's own clients).
  regions = await startViaPeerRegions({
    clientAuth: { required: true, keys: [{ id: "0123456789ab", name: "eu-team", region: "eu-frankfurt", sha256: sha256Hex(EU_KEY) }] },
  });
  ({ lbUs, lbEu } = regions);
});
after(async () => {
  await regions?.close();
});

test("a keyless client never gets served by the keys-required region's replicas", async () => {
  // Direct: refused, as intended.
  const direct = await post(`${lbEu.url}/v1/chat/completions`, chatBody("no key, direct"));
  assert.equal(direct.status, 401);
  // Through the open region's LB, once its own replica is busy: keyless requests.
  const pending = await fillReplicas(lbUs, "keyless");
  const viaPeer = await post(`${lbUs.url}/v1/chat/completions`, chatBody("keyless, lands in eu"));
  await Promise.all(pending);
  const servedBy = `status ${viaPeer.status}, x-meridian-forwarded-to=${String(viaPeer.headers["x-meridian-forwarded-to"])}, x-meridian-replica=${String(viaPeer.headers["x-meridian-replica"])}`;
  assert.ok(
    !(viaPeer.status === 200 && viaPeer.headers["x-meridian-forwarded-to"] === "lb-eu"),
    `keyless request served by the keys-required region: ${servedBy}`,
  );
});
