import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createPolicy, createRng, DEFAULT_WEIGHTS, type CandidateView } from "@meridian/routing";
import { EngineModel, PAPER_ENGINE_PARAMS } from "../engine";
import { OracleIndex } from "./oracle-index";

function engineHolding(id: string, keys: number[]): EngineModel {
  const engine = new EngineModel(id, PAPER_ENGINE_PARAMS);
  engine.submit({ id: "warm", blockKeys: keys, inputTokens: keys.length * 512, maxOutputTokens: 1 }, 0);
  for (let t = engine.nextEventTime(); Number.isFinite(t); t = engine.nextEventTime()) engine.advance(t);
  return engine;
}

describe("OracleIndex", () => {
  it("answers from the engines' caches, and a policy routes on it like on a prefix index", () => {
    const engines = new Map([
      ["a", engineHolding("a", [1, 2, 3])],
      ["b", engineHolding("b", [1, 2, 3, 4, 5])],
    ]);
    const oracle = new OracleIndex(engines);
    const m = oracle.match([1, 2, 3, 4, 5, 6], 0, ["a", "b", "c"]);
    assert.deepEqual(
      [...m.depthByReplica],
      [
        ["a", 3],
        ["b", 5],
        ["c", 0],
      ],
    );
    assert.equal(m.maxDepth, 5);
    assert.deepEqual([...oracle.match([9], 0).depthByReplica], []);
    const candidate = (id: string): CandidateView => ({
      id,
      region: "us",
      rttMs: 10,
      inFlight: 0,
      queuedTokens: 0,
      pendingPrefillTokens: 0,
      scraped: null,
      full: false,
      healthy: true,
    });
    const d = createPolicy("gorgo").select(
      { keys: [1, 2, 3, 4, 5, 6], inputTokens: 6 * 512, tokensPerBlock: 512, sessionKey: "s", clientRegion: "us" },
      [candidate("a"), candidate("b")],
      { index: oracle, weights: DEFAULT_WEIGHTS, rng: createRng(1), now: 0 },
    );
    assert.equal(d.choice, "b");
    assert.equal(d.predictedCachedTokens, 5 * 512);
  });
});
