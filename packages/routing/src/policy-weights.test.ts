// Policy.usesCostWeights is what the tuner's pause rests on: it must say the truth about every policy.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { traceBlockKeys } from "./keys";
import { PrefixIndex } from "./prefix-index";
import { createRng } from "./rng";
import { createPolicy, policyUsesCostWeights } from "./select";
import { type CandidateView, POLICY_NAMES, type PolicyName, type Weights } from "./types";

const prompt = traceBlockKeys(Array.from({ length: 60 }, (_, i) => 5000 + i));

/** A fleet where RTT, queue and cache pull in different directions, and the choices over 200 requests. */
function choices(name: PolicyName, weights: Weights): string[] {
  const index = new PrefixIndex({ capacityBlocks: 100_000 });
  index.learn(prompt.slice(0, 30), "far-warm", "LOCAL", 0);
  const candidates: CandidateView[] = [
    { id: "near-busy", region: "us-ashburn", rttMs: 5, inFlight: 6, queuedTokens: 4000, pendingPrefillTokens: 0, scraped: null, full: false, healthy: true },
    { id: "near-idle", region: "us-ashburn", rttMs: 40, inFlight: 1, queuedTokens: 0, pendingPrefillTokens: 0, scraped: null, full: false, healthy: true },
    { id: "far-warm", region: "ap-seoul", rttMs: 180, inFlight: 2, queuedTokens: 800, pendingPrefillTokens: 0, scraped: null, full: false, healthy: true },
  ];
  const policy = createPolicy(name);
  const ctx = { index, weights, rng: createRng(7), now: 1000 };
  return Array.from({ length: 200 }, (_, i) => {
    const keys = i % 2 === 0 ? prompt : prompt.slice(0, 10 + (i % 40));
    const request = { keys, inputTokens: keys.length * 16, tokensPerBlock: 16, sessionKey: `s${i % 17}`, clientRegion: "us-ashburn" };
    return policy.select(request, candidates, ctx).choice;
  });
}

describe("Policy.usesCostWeights", () => {
  it("is false exactly for the policies whose decisions no weight changes", () => {
    const extremes: Weights[] = [
      { rtt: 0.05, queue: 0.05 },
      { rtt: 100, queue: 0.05 },
      { rtt: 0.05, queue: 10 },
    ];
    for (const name of POLICY_NAMES) {
      const runs = extremes.map((w) => choices(name, w).join(","));
      const weightsMatter = new Set(runs).size > 1;
      assert.equal(policyUsesCostWeights(name), weightsMatter, `${name}: usesCostWeights says ${policyUsesCostWeights(name)}`);
    }
  });

  it("names gorgo as the one policy the tuner tunes, and least-load as one it does not", () => {
    assert.equal(policyUsesCostWeights("gorgo"), true);
    assert.equal(policyUsesCostWeights("least-load"), false);
    assert.equal(policyUsesCostWeights("least-request"), false);
  });
});
