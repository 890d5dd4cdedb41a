// prefix-cache against AIBrix's prefix-cache router (vllm-project/aibrix,
// pkg/plugins/gateway/algorithms/prefix_cache.go, getTargetPodFromMatchedPodsFromCounts): every matched
// pod, by match % descending then running requests ascending; the first whose running count is
// <= mean + 1·σ (over all ready pods) wins; least-request only when none qualifies.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PrefixIndex } from "../prefix-index";
import { createPolicy } from "../select";
import { createPrefixCachePolicy } from "./prefix-cache";
import { candidate, context, request } from "./test-support";

const prompt = request(8); // 8 chained keys

/** A context whose prefix index has each replica holding the prompt's first `blocks` keys. */
function warm(holdings: Record<string, number>) {
  const index = new PrefixIndex({ capacityBlocks: 1024 });
  for (const [id, blocks] of Object.entries(holdings)) index.learn(prompt.keys.slice(0, blocks), id, "LOCAL", 0);
  return { ...context(), index };
}

describe("prefix-cache follows AIBrix's matched-pod rule", () => {
  it("3 pods: the deepest holder above mean + 1σ is skipped for the partial match", () => {
    const ctx = warm({ a: 8, b: 4 }); // a holds all 8 blocks, b the first 4
    // loads 6, 1, 0: mean 2.33, σ 2.62, ceiling 4.96 → a (100 %) skipped, b (50 %) taken.
    const d = createPolicy("prefix-cache").select(
      prompt,
      [candidate("a", { inFlight: 6 }), candidate("b", { inFlight: 1 }), candidate("c", { inFlight: 0 })],
      ctx,
    );
    assert.equal(d.choice, "b");
    assert.equal(d.reason, undefined);
  });

  it("6 pods: the next-best match is taken, not a cold pod", () => {
    const ctx = warm({ a: 8, b: 4 }); // a holds all 8 blocks, b the first 4
    const cs = [candidate("a", { inFlight: 7 }), candidate("b", { inFlight: 1 }), ...["c", "d", "e", "f"].map((id) => candidate(id, { inFlight: 0 }))];
    // loads 7,1,0,0,0,0: mean 1.33, σ 2.56, ceiling 3.89: a skipped, b (1) taken.
    assert.equal(createPolicy("prefix-cache").select(prompt, cs, ctx).choice, "b");
  });

  it("the factor is an option: with standardDeviationFactor 2 the deepest holder stays under the ceiling", () => {
    const ctx = warm({ a: 8, b: 4 }); // a holds all 8 blocks, b the first 4
    // loads 6, 1, 0: ceiling 2.33 + 2·2.62 = 7.57 → a.
    const d = createPrefixCachePolicy({ standardDeviationFactor: 2 }).select(
      prompt,
      [candidate("a", { inFlight: 6 }), candidate("b", { inFlight: 1 }), candidate("c", { inFlight: 0 })],
      ctx,
    );
    assert.equal(d.choice, "a");
    assert.throws(() => createPrefixCachePolicy({ standardDeviationFactor: -1 }), /standardDeviationFactor/);
  });

  it("falls back to least-request only when no matched pod is within mean + 1σ", () => {
    const ctx = warm({ a: 8, b: 4 }); // a holds all 8 blocks, b the first 4
    // loads 5, 5, 0×8: mean 1, σ 2, ceiling 3: both matched pods over it → least-request among the cold.
    const cs = [candidate("a", { inFlight: 5 }), candidate("b", { inFlight: 5 }), ...Array.from({ length: 8 }, (_, i) => candidate(`c${i}`, { inFlight: 0 }))];
    const d = createPolicy("prefix-cache").select(prompt, cs, ctx);
    assert.match(d.choice, /^c\d$/);
    assert.match(d.reason ?? "", /fallback:least-request/);
  });

  it("among equal matches takes the fewest running", () => {
    const ctx = warm({ a: 8, b: 8 });
    const d = createPolicy("prefix-cache").select(
      prompt,
      [candidate("a", { inFlight: 2 }), candidate("b", { inFlight: 1 }), candidate("c", { inFlight: 1 })],
      ctx,
    );
    assert.equal(d.choice, "b");
  });
});
