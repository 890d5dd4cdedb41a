// LBs share their in-flight tokens: what a peer LB has in flight on a replica counts in this LB's
// queued_tokens for it, so two LBs do not pile onto the same replica.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import type { LbState } from "@meridian/protocol";
import type { RunningProxy } from "../src/index";
import {
  adminGet,
  adminPutConfig,
  chatBody,
  DEMO_ENGINE_PARAMS,
  lbConfig,
  post,
  servedBy,
  startEngine,
  startLb,
  waitFor,
  peerEntry,
  type Engine,
} from "./helpers";

// Long replies keep the peer's requests in flight while we look.
const SLOW = { ...DEMO_ENGINE_PARAMS, itlBaseMs: 20, maxOutputTokens: 150 };

let r1: Engine;
let r2: Engine;
let lbA: RunningProxy;
let lbB: RunningProxy;

before(async () => {
  r1 = await startEngine("us-r1", "us-ashburn", { params: SLOW });
  r2 = await startEngine("us-r2", "us-ashburn", { params: SLOW });
  const aConfig = lbConfig("lb-a", "us-ashburn", [r1, r2], { policy: "gorgo" });
  // lb-b may only use r1, so everything it has in flight sits there.
  const bConfig = lbConfig("lb-b", "us-ashburn", [r1, r2], { policy: "gorgo" });
  bConfig.replicas = (bConfig.replicas ?? []).map((r) => (r.id === "us-r2" ? { ...r, state: "disabled" as const } : r));
  lbA = await startLb(aConfig);
  lbB = await startLb(bConfig);
  await adminPutConfig(lbA, { ...aConfig, version: 2, peers: [peerEntry(lbB, "lb-b", "us-ashburn")] });
  await adminPutConfig(lbB, { ...bConfig, version: 2, peers: [peerEntry(lbA, "lb-a", "us-ashburn")] });
});
after(async () => {
  await lbA?.close();
  await lbB?.close();
  await r1?.close();
  await r2?.close();
});

test("a peer's in-flight tokens steer this LB away from the replica it loads", async () => {
  const long = (tag: string) => chatBody(`${tag} ` + "context ".repeat(1500), { max_tokens: 150 });
  const peerLoad = Array.from({ length: 3 }, (_, i) => post(`${lbB.url}/v1/chat/completions`, long(`peer ${i}`)));
  const seen = await waitFor("lb-a sees lb-b's tokens on r1", async () => {
    const state = await adminGet<LbState>(lbA, "/admin/state");
    const r1State = state.replicas.find((r) => r.id === "us-r1");
    return r1State && r1State.peerQueuedTokens > 0 && r1State.inFlight === 0 ? r1State : undefined;
  });
  assert.ok(seen.peerQueuedTokens > 1000, `peer tokens ${seen.peerQueuedTokens}`);
  // Fresh, uncached prompts: without the peer's tokens r1 and r2 would tie.
  for (let i = 0; i < 4; i++) {
    const result = await post(`${lbA.url}/v1/chat/completions`, chatBody(`fresh question ${i}`));
    assert.equal(result.status, 200);
    assert.equal(servedBy(result), "us-r2");
  }
  for (const result of await Promise.all(peerLoad)) assert.equal(result.status, 200);
});
