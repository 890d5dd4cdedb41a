// The proxy runs the peer routers' policies end to end: each learns where a conversation went from
// the dispatch events the LB core reports, and releases its books on first token and completion,
// so a conversation's later turns keep going where its first turn went.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import type { LbState } from "@meridian/protocol";
import type { PolicyName } from "@meridian/routing";
import type { RunningProxy } from "../src/index";
import { adminGet, chatBody, lbConfig, post, servedBy, startEngine, startLb, waitFor, type Engine } from "./helpers";

let a: Engine;
let b: Engine;

before(async () => {
  // Same region: no RTT difference, so only the policy's own state tells the replicas apart.
  a = await startEngine("us-a", "us-ashburn");
  b = await startEngine("us-b", "us-ashburn");
});
after(async () => {
  await a?.close();
  await b?.close();
});

function turn(topic: string, n: number): Record<string, unknown> {
  const history = `Notes on ${topic}: ` + `${topic} details, one after another. `.repeat(120);
  return chatBody(`question ${n}`, {
    messages: [
      { role: "system", content: history },
      { role: "user", content: `question ${n}` },
    ],
  });
}

/** Two conversations, turns interleaved; the replicas that served each, in order. */
async function conversationReplicas(policy: PolicyName): Promise<[string[], string[]]> {
  let lb: RunningProxy | undefined;
  try {
    lb = await startLb(lbConfig(`lb-${policy}`, "us-ashburn", [a, b], { policy, crossRegion: "direct" }));
    await waitFor("both replicas healthy", async () => {
      const state = await adminGet<LbState>(lb!, "/admin/state");
      return state.replicas.every((r) => r.healthy) ? state : undefined;
    });
    const served: [string[], string[]] = [[], []];
    for (let n = 1; n <= 3; n++) {
      for (const [i, topic] of [`${policy} glaciers`, `${policy} orchards`].entries()) {
        const result = await post(`${lb.url}/v1/chat/completions`, turn(topic, n));
        assert.equal(result.status, 200, result.text);
        served[i]!.push(servedBy(result) ?? "none");
      }
    }
    return served;
  } finally {
    await lb?.close();
  }
}

for (const policy of ["sglang-cache-aware", "llm-d", "dynamo-kv"] as const) {
  test(`${policy}: a conversation's later turns follow its first turn`, async () => {
    const [first, second] = await conversationReplicas(policy);
    for (const served of [first, second]) {
      assert.ok(served[0] === "us-a" || served[0] === "us-b", served.join(","));
      assert.deepEqual(served, [served[0], served[0], served[0]], `served by ${served.join(", ")}`);
    }
    // SGLang sends an unmatched prompt to the least-loaded worker, ties to the one it routed fewer
    // requests to: the second conversation starts on the other replica.
    if (policy === "sglang-cache-aware") assert.notEqual(first[0], second[0]);
  });
}
