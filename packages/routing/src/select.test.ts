import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EXCLUDED_SCORE, RoutingInputError } from "./errors";
import { traceBlockKeys } from "./keys";
import { HashRing } from "./policies/hashing";
import { PrefixIndex } from "./prefix-index";
import { createRng } from "./rng";
import { createPolicy, isPolicyName } from "./select";
import { type CandidateView, DEFAULT_WEIGHTS, POLICY_NAMES, type RequestView, type Weights } from "./types";
import { validateWeights } from "./validate";

function candidate(id: string, over: Partial<CandidateView> = {}): CandidateView {
  return { id, region: "us-ashburn", rttMs: 10, inFlight: 0, queuedTokens: 0, pendingPrefillTokens: 0, scraped: null, full: false, healthy: true, ...over };
}

function request(keys: number[], over: Partial<RequestView> = {}): RequestView {
  return { keys, inputTokens: 2000, tokensPerBlock: 16, sessionKey: "session-1", clientRegion: "us-ashburn", ...over };
}

function context(index = new PrefixIndex({ capacityBlocks: 100_000 }), weights: Weights = { ...DEFAULT_WEIGHTS }, seed = 1) {
  return { index, weights, rng: createRng(seed), now: 1000 };
}

const prompt = traceBlockKeys(Array.from({ length: 100 }, (_, i) => 1000 + i));

describe("gorgo", () => {
  // near: cold, 10 ms away. far: 300 ms away, holds `warmBlocks` blocks of 16 tokens.
  function pick(warmBlocks: number, wRtt: number): string {
    const ctx = context(undefined, { rtt: wRtt, queue: 0.1 });
    ctx.index.learn(prompt.slice(0, warmBlocks), "far", "LOCAL", 0);
    const candidates = [candidate("near", { rttMs: 10 }), candidate("far", { rttMs: 300, region: "ap-seoul" })];
    return createPolicy("gorgo").select(request(prompt), candidates, ctx).choice;
  }

  it("takes the warm far replica exactly when W_rtt·ΔRTT < Δuncached", () => {
    // Δuncached = 10 blocks × 16 = 160 tokens; ΔRTT = 290 ms.
    assert.equal(pick(10, 0.55), "far", "0.55 × 290 = 159.5 < 160");
    assert.equal(pick(10, 0.56), "near", "0.56 × 290 = 162.4 > 160");
    // Same boundary approached through the cache instead of the weight (W_rtt = 0.5 → 145).
    assert.equal(pick(10, 0.5), "far", "145 < 160");
    assert.equal(pick(9, 0.5), "near", "145 > 144");
  });

  it("treats W_rtt·ΔRTT = Δuncached as a tie and breaks it both ways at random", () => {
    const ctx = context(undefined, { rtt: 0.5, queue: 0.1 });
    ctx.index.learn(prompt.slice(0, 10), "far", "LOCAL", 0); // Δuncached = 160
    const candidates = [candidate("near", { rttMs: 10 }), candidate("far", { rttMs: 330 })]; // 0.5 × 320 = 160
    const policy = createPolicy("gorgo");
    const picks = new Set(Array.from({ length: 100 }, () => policy.select(request(prompt), candidates, ctx).choice));
    assert.deepEqual([...picks].sort(), ["far", "near"]);
  });

  it("scores every candidate in candidate order with the full cost and predicts cached tokens", () => {
    const ctx = context();
    ctx.index.learn(prompt.slice(0, 25), "b", "LOCAL", 0);
    const d = createPolicy("gorgo").select(
      request(prompt, { inputTokens: 1000 }),
      [candidate("a", { rttMs: 20, queuedTokens: 500 }), candidate("b", { rttMs: 40 })],
      ctx,
    );
    assert.deepEqual(d.scores, [
      { id: "a", score: 0.5 * 20 + 0.1 * 500 + 1000, matchedBlocks: 0 },
      { id: "b", score: 0.5 * 40 + (1000 - 400), matchedBlocks: 25 },
    ]);
    assert.equal(d.choice, "b");
    assert.equal(d.predictedCachedTokens, 400);
  });

  it("caps predicted cached tokens at the input size", () => {
    const ctx = context();
    ctx.index.learn(prompt, "a", "LOCAL", 0);
    const d = createPolicy("gorgo").select(request(prompt, { inputTokens: 50 }), [candidate("a")], ctx);
    assert.equal(d.predictedCachedTokens, 50);
    assert.equal(d.scores[0]!.score, 0.5 * 10);
  });

  it("moves off a warm replica when its queued tokens cost more than the cache saves", () => {
    const ctx = context();
    ctx.index.learn(prompt.slice(0, 50), "warm", "LOCAL", 0); // saves 800 tokens
    const policy = createPolicy("gorgo");
    const calm = policy.select(request(prompt), [candidate("warm", { queuedTokens: 7000 }), candidate("cold")], ctx);
    const busy = policy.select(request(prompt), [candidate("warm", { queuedTokens: 9000 }), candidate("cold")], ctx);
    assert.equal(calm.choice, "warm");
    assert.equal(busy.choice, "cold");
  });

  it("breaks exact ties uniformly at random, reproducibly for a seed", () => {
    const policy = createPolicy("gorgo");
    const ctx = context();
    const counts = new Map<string, number>();
    const candidates = [candidate("a"), candidate("b"), candidate("c")];
    for (let i = 0; i < 3000; i++) {
      const c = policy.select(request(prompt), candidates, ctx).choice;
      counts.set(c, (counts.get(c) ?? 0) + 1);
    }
    for (const id of ["a", "b", "c"]) assert.ok(Math.abs((counts.get(id) ?? 0) - 1000) < 120, `${id}: ${counts.get(id)}`);
    const seq = (seed: number) => Array.from({ length: 20 }, () => policy.select(request(prompt), candidates, context(undefined, undefined, seed)).choice);
    assert.deepEqual(seq(5), seq(5));
  });
});

describe("least-request and least-load", () => {
  it("least-request picks the fewest in-flight, counting the scraped running count too", () => {
    const d = createPolicy("least-request").select(
      request(prompt),
      [
        candidate("a", { inFlight: 5 }),
        candidate("b", { inFlight: 2, scraped: { running: 9, waiting: 0, usedTokens: 0 } }),
        candidate("c", { inFlight: 3, scraped: { running: 1, waiting: 0, usedTokens: 0 } }),
      ],
      context(),
    );
    assert.equal(d.choice, "c");
    assert.deepEqual(
      d.scores.map((s) => s.score),
      [5, 9, 3],
    );
  });

  it("least-load sums running, waiting and used KV tokens with this LB's queued tokens", () => {
    const d = createPolicy("least-load").select(
      request(prompt),
      [
        candidate("a", { queuedTokens: 100, scraped: { running: 2, waiting: 1, usedTokens: 5000 } }),
        candidate("b", { queuedTokens: 3000, scraped: { running: 1, waiting: 0, usedTokens: 1000 } }),
      ],
      context(),
    );
    assert.deepEqual(
      d.scores.map((s) => s.score),
      [5103, 4001],
    );
    assert.equal(d.choice, "b");
  });
});

describe("prefix-cache", () => {
  const running = (n: number) => ({ running: n, waiting: 0, usedTokens: 0 });

  it("follows the longest match while the running spread is ≤ 8", () => {
    const ctx = context();
    ctx.index.learn(prompt.slice(0, 40), "warm", "LOCAL", 0);
    const d = createPolicy("prefix-cache").select(
      request(prompt),
      [candidate("idle", { scraped: running(0) }), candidate("warm", { scraped: running(8) })],
      ctx,
    );
    assert.equal(d.choice, "warm");
    assert.equal(d.reason, undefined);
    assert.equal(d.predictedCachedTokens, 640);
  });

  it("falls back to least-request when the spread of running requests is > 8", () => {
    const ctx = context();
    ctx.index.learn(prompt.slice(0, 40), "warm", "LOCAL", 0);
    const d = createPolicy("prefix-cache").select(
      request(prompt),
      [candidate("idle", { scraped: running(0) }), candidate("warm", { scraped: running(9) })],
      ctx,
    );
    assert.equal(d.choice, "idle");
    assert.match(d.reason ?? "", /fallback:least-request/);
  });

  it("falls back to least-request when nothing matches", () => {
    const d = createPolicy("prefix-cache").select(request(prompt), [candidate("a", { inFlight: 3 }), candidate("b", { inFlight: 1 })], context());
    assert.equal(d.choice, "b");
    assert.match(d.reason ?? "", /no prefix match/);
  });

  it("among equally long matches takes the fewest running, skipping any above mean + 1σ", () => {
    const ctx = context();
    for (const id of ["w1", "w2", "w3"]) ctx.index.learn(prompt.slice(0, 30), id, "LOCAL", 0);
    const candidates = [
      candidate("w1", { scraped: running(6) }),
      candidate("w2", { scraped: running(4) }),
      candidate("w3", { scraped: running(5) }),
      candidate("cold", { scraped: running(0) }),
    ];
    assert.equal(createPolicy("prefix-cache").select(request(prompt), candidates, ctx).choice, "w2");
    // One warm replica far above the others (mean + 1σ excludes it): the policy drops to least-request.
    const ctx2 = context();
    ctx2.index.learn(prompt.slice(0, 30), "hot", "LOCAL", 0);
    const many = [candidate("hot", { scraped: running(8) }), ...Array.from({ length: 9 }, (_, i) => candidate(`c${i}`, { scraped: running(0) }))];
    const d = createPolicy("prefix-cache").select(request(prompt), many, ctx2);
    assert.notEqual(d.choice, "hot");
    assert.match(d.reason ?? "", /overloaded/);
  });
});

describe("consistent-hash", () => {
  const ids = Array.from({ length: 10 }, (_, i) => `replica-${i}`);
  const keys = Array.from({ length: 10_000 }, (_, i) => `session-${i}`);

  it("spreads 10k session keys over 10 replicas within ±15% of even", () => {
    const policy = createPolicy("consistent-hash");
    const ctx = context();
    const counts = new Map<string, number>();
    for (const sessionKey of keys) {
      const c = policy.select(
        request([], { sessionKey }),
        ids.map((id) => candidate(id)),
        ctx,
      ).choice;
      counts.set(c, (counts.get(c) ?? 0) + 1);
    }
    for (const id of ids) {
      const share = (counts.get(id) ?? 0) / keys.length;
      assert.ok(Math.abs(share - 0.1) <= 0.015, `${id} holds ${(share * 100).toFixed(2)}%`);
    }
  });

  it("moves only the departed replica's keys when 1 of 10 leaves (≥ 88.5% stay for every departure)", () => {
    const full = new HashRing(ids, 100);
    const before = keys.map((k) => ids[full.lookup(k)]);
    for (const gone of ids) {
      const ring = new HashRing(
        ids.filter((id) => id !== gone),
        100,
      );
      let kept = 0;
      for (let i = 0; i < keys.length; i++) {
        const after = ring.ids[ring.lookup(keys[i]!)];
        if (after === before[i]) kept++;
        else assert.equal(before[i], gone, `key ${keys[i]} moved although its replica stayed`);
      }
      // kept = 1 − share(departed); the ±15% balance bounds that share by 11.5%.
      assert.ok(kept / keys.length >= 0.885, `${gone} leaving kept only ${kept}`);
    }
  });

  it("skips full targets while any target is not full", () => {
    const policy = createPolicy("consistent-hash");
    const oneFull = ids.map((id) => candidate(id, { full: id === "replica-2" }));
    const picks = keys.slice(0, 2000).map((sessionKey) => policy.select(request([], { sessionKey }), oneFull, context()).choice);
    assert.ok(!picks.includes("replica-2"));
    const allFull = ids.map((id) => candidate(id, { full: true }));
    const stillRouted = keys.slice(0, 2000).map((sessionKey) => policy.select(request([], { sessionKey }), allFull, context()).choice);
    assert.ok(stillRouted.includes("replica-2"), "with every target full, the ring is used as is");
  });

  it("skips unhealthy targets without moving anyone else's keys", () => {
    const policy = createPolicy("consistent-hash");
    const healthy = ids.map((id) => candidate(id));
    const oneDown = ids.map((id) => candidate(id, { healthy: id !== "replica-4" }));
    for (const sessionKey of keys.slice(0, 2000)) {
      const a = policy.select(request([], { sessionKey }), healthy, context()).choice;
      const b = policy.select(request([], { sessionKey }), oneDown, context()).choice;
      assert.notEqual(b, "replica-4");
      if (a !== "replica-4") assert.equal(b, a);
    }
  });
});

describe("session-affinity, round-robin, random", () => {
  it("session-affinity sends one session to one replica whatever the candidate order", () => {
    const policy = createPolicy("session-affinity");
    const cs = ["a", "b", "c", "d"].map((id) => candidate(id));
    const first = policy.select(request([], { sessionKey: "user-42" }), cs, context()).choice;
    assert.equal(policy.select(request([], { sessionKey: "user-42" }), [...cs].reverse(), context()).choice, first);
    const seen = new Set(Array.from({ length: 200 }, (_, i) => policy.select(request([], { sessionKey: `u${i}` }), cs, context()).choice));
    assert.equal(seen.size, 4);
  });

  it("round-robin cycles through healthy candidates and keeps its turn per instance", () => {
    const policy = createPolicy("round-robin");
    const cs = [candidate("a"), candidate("b", { healthy: false }), candidate("c")];
    const picks = Array.from({ length: 4 }, () => policy.select(request([]), cs, context()).choice);
    assert.deepEqual(picks, ["a", "c", "a", "c"]);
    assert.equal(createPolicy("round-robin").select(request([]), cs, context()).choice, "a");
  });

  it("random is reproducible for a seed and covers every healthy candidate", () => {
    const cs = ["a", "b", "c"].map((id) => candidate(id));
    const run = (seed: number) => {
      const ctx = context(undefined, undefined, seed);
      return Array.from({ length: 60 }, () => createPolicy("random").select(request([]), cs, ctx).choice);
    };
    assert.deepEqual(run(3), run(3));
    assert.equal(new Set(run(3)).size, 3);
  });
});

describe("skylb", () => {
  it("takes the longest prefix match, breaking ties by least load", () => {
    const ctx = context();
    ctx.index.learn(prompt.slice(0, 20), "a", "LOCAL", 0);
    ctx.index.learn(prompt.slice(0, 20), "b", "LOCAL", 0);
    ctx.index.learn(prompt.slice(0, 5), "c", "LOCAL", 0);
    const d = createPolicy("skylb").select(
      request(prompt),
      [candidate("a", { inFlight: 4 }), candidate("b", { inFlight: 2 }), candidate("c"), candidate("d")],
      ctx,
    );
    assert.equal(d.choice, "b");
    assert.equal(d.predictedCachedTokens, 320);
  });

  it("uses least load when nothing matches", () => {
    const d = createPolicy("skylb").select(request(prompt), [candidate("a", { inFlight: 4 }), candidate("b", { inFlight: 1 })], context());
    assert.equal(d.choice, "b");
  });
});

describe("learned-prefix", () => {
  function setup(targetInFlight: number) {
    const ctx = context();
    ctx.index.learn(prompt.slice(0, 60), "target", "LOCAL", 0);
    const cs = [
      candidate("target", { inFlight: targetInFlight }),
      candidate("x", { inFlight: 3 }),
      candidate("y", { inFlight: 3 }),
      candidate("z", { inFlight: 2 }),
    ];
    return createPolicy("learned-prefix").select(request(prompt), cs, ctx);
  }

  it("follows the longest learned route while the target is at most 2× the median in-flight", () => {
    // in-flight 6, 3, 3, 2 → median 3; 6 is not > 6.
    const d = setup(6);
    assert.equal(d.choice, "target");
    assert.equal(d.predictedCachedTokens, 960);
  });

  it("diverts to the least-loaded replica when the target's in-flight is > 2× the median", () => {
    const d = setup(7);
    assert.equal(d.choice, "z");
    assert.match(d.reason ?? "", /override:least-loaded/);
    assert.equal(d.predictedCachedTokens, 0);
  });

  it("falls back to consistent hashing on the session key when nothing is learned", () => {
    const cs = ["a", "b", "c"].map((id) => candidate(id));
    const d1 = createPolicy("learned-prefix").select(request(prompt, { sessionKey: "s-9" }), cs, context());
    const d2 = createPolicy("consistent-hash").select(request(prompt, { sessionKey: "s-9" }), cs, context());
    assert.equal(d1.choice, d2.choice);
    assert.match(d1.reason ?? "", /fallback:consistent-hash/);
  });
});

describe("every policy", () => {
  it("is constructible by name, and unknown names are rejected", () => {
    for (const name of POLICY_NAMES) assert.equal(createPolicy(name).name, name);
    assert.ok(isPolicyName("gorgo") && !isPolicyName("fastest"));
    assert.throws(() => createPolicy("fastest" as "gorgo"), /unknown policy/);
  });

  it("never picks an unhealthy candidate, even a far better one", () => {
    const ctx = context();
    ctx.index.learn(prompt, "sick", "LOCAL", 0);
    const cs = [candidate("sick", { healthy: false, rttMs: 0 }), candidate("ok", { rttMs: 500, inFlight: 30, queuedTokens: 90_000 })];
    for (const name of POLICY_NAMES) {
      for (let i = 0; i < 20; i++) {
        const d = createPolicy(name).select(request(prompt, { sessionKey: `k${i}` }), cs, ctx);
        assert.equal(d.choice, "ok", name);
        assert.equal(d.scores[0]!.score, EXCLUDED_SCORE, name);
        assert.equal(d.scores.length, 2);
      }
      assert.throws(() => createPolicy(name).select(request(prompt), [candidate("sick", { healthy: false })], ctx), /no healthy candidate/);
    }
  });
});

describe("bad input is an error, never a silent pick", () => {
  const cs = [candidate("a"), candidate("b")];
  const gorgo = createPolicy("gorgo");

  it("rejects NaN, negative and infinite weights", () => {
    assert.throws(() => gorgo.select(request(prompt), cs, context(undefined, { rtt: Number.NaN, queue: 0.1 })), /weights\.rtt/);
    assert.throws(() => gorgo.select(request(prompt), cs, context(undefined, { rtt: 0.5, queue: -0.1 })), /weights\.queue/);
    assert.throws(() => gorgo.select(request(prompt), cs, context(undefined, { rtt: Number.POSITIVE_INFINITY, queue: 0.1 })), RoutingInputError);
  });

  it("rejects inverted or non-positive bounds and weights outside them", () => {
    const bounds = { rtt: [0.05, 2] as const, queue: [0.05, 0.5] as const };
    assert.doesNotThrow(() => validateWeights(DEFAULT_WEIGHTS, bounds));
    assert.throws(() => validateWeights(DEFAULT_WEIGHTS, { ...bounds, rtt: [2, 0.05] }), /bounds\.rtt: bounds are inverted/);
    assert.throws(() => validateWeights(DEFAULT_WEIGHTS, { ...bounds, queue: [0, 0.5] }), /bounds\.queue\[0\]/);
    assert.throws(() => validateWeights({ rtt: 3, queue: 0.1 }, bounds), /weights\.rtt: 3 is outside/);
  });

  it("rejects an empty candidate list", () => {
    for (const name of POLICY_NAMES) assert.throws(() => createPolicy(name).select(request(prompt), [], context()), /candidates: is empty/);
  });

  it("rejects negative or NaN token counts and bad block sizes", () => {
    assert.throws(() => gorgo.select(request(prompt, { inputTokens: -1 }), cs, context()), /request\.inputTokens: must be >= 0/);
    assert.throws(() => gorgo.select(request(prompt, { inputTokens: Number.NaN }), cs, context()), /request\.inputTokens/);
    assert.throws(() => gorgo.select(request(prompt, { tokensPerBlock: 0 }), cs, context()), /request\.tokensPerBlock/);
  });

  it("rejects malformed candidates, duplicate ids and bad block keys", () => {
    assert.throws(() => gorgo.select(request(prompt), [candidate("a", { rttMs: Number.NaN })], context()), /candidates\[0\]\.rttMs/);
    assert.throws(() => gorgo.select(request(prompt), [candidate("a", { queuedTokens: -5 })], context()), /candidates\[0\]\.queuedTokens/);
    assert.throws(() => gorgo.select(request(prompt), [candidate("a"), candidate("a")], context()), /duplicate candidate id/);
    assert.throws(() => gorgo.select(request([1, -2]), cs, context()), /keys\[1\]/);
    assert.throws(() => gorgo.select(request(prompt), cs, { ...context(), now: Number.NaN }), /now/);
  });
});
