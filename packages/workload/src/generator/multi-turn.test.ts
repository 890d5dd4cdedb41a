import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assignRegion } from "../trace/controls";
import { sessionKeyOf } from "../trace/session-roots";
import { createMultiTurnWorkload, multiTurnTrace, type WorkloadRequest } from "./multi-turn";

const take = (n: number, seed = 3, regions: Record<string, number> = { a: 1, b: 1 }): WorkloadRequest[] => [
  ...createMultiTurnWorkload({ seed, maxRequests: n, regions, sessions: 6, ratePerS: 5 }),
];

describe("multi-turn generator", () => {
  it("is deterministic for a seed and differs across seeds", () => {
    assert.deepEqual(take(60), take(60));
    assert.notDeepEqual(
      take(20, 4).map((r) => r.hashIds),
      take(20).map((r) => r.hashIds),
    );
  });

  it("grows each session's context turn by turn, sharing the previous turn's prefix", () => {
    const requests = take(200);
    const bySession = new Map<string, WorkloadRequest[]>();
    for (const r of requests) bySession.set(r.sessionId, [...(bySession.get(r.sessionId) ?? []), r]);
    let checkedPairs = 0;
    for (const turns of bySession.values()) {
      turns.forEach((r, k) => assert.equal(r.turn, k + 1));
      for (let k = 1; k < turns.length; k++) {
        const prev = turns[k - 1]!;
        const cur = turns[k]!;
        // previous messages + assistant reply + new user message
        assert.equal(cur.messages.length, prev.messages.length + 2);
        assert.deepEqual(cur.messages.slice(0, prev.messages.length), prev.messages);
        assert.equal(cur.messages.at(-2)!.role, "assistant");
        assert.equal(cur.messages.at(-1)!.role, "user");
        assert.ok(cur.inputTokens > prev.inputTokens);
        // every complete block of the previous prompt keeps its id
        const full = Math.floor((prev.inputTokens * 4) / (prev.blockTokens * 4));
        assert.deepEqual(cur.hashIds.slice(0, full - 1), prev.hashIds.slice(0, full - 1));
        assert.equal(cur.region, prev.region);
        checkedPairs++;
      }
    }
    assert.ok(checkedPairs > 50);
  });

  it("shares the system block across sessions, and the root (two blocks) tells sessions apart", () => {
    const requests = take(100);
    const first = requests[0]!;
    for (const r of requests) {
      assert.equal(r.hashIds[0], first.hashIds[0]);
      assert.equal(r.messages[0]!.content, first.messages[0]!.content);
      assert.equal(r.region, assignRegion(sessionKeyOf(r.hashIds, 2), { a: 1, b: 1 }), "the simulator can re-derive the region");
    }
    const roots = new Set(requests.map((r) => sessionKeyOf(r.hashIds, 2)));
    const sessions = new Set(requests.map((r) => r.sessionId));
    assert.equal(roots.size, sessions.size);
  });

  it("honours rate, duration and region weights roughly", () => {
    const rows = multiTurnTrace({ seed: 9, ratePerS: 10, durationMs: 60_000, regions: { east: 3, west: 1 }, sessions: 50, turns: { min: 1, max: 2 } });
    assert.ok(rows.length > 500 && rows.length < 700, `${rows.length} requests in 60 s at 10/s`);
    assert.ok(rows.every((r) => r.timestampMs < 60_000 && r.format === "multi-turn"));
    const east = rows.filter((r) => r.region === "east").length / rows.length;
    assert.ok(east > 0.65 && east < 0.85, `east share ${east}`);
    assert.throws(() => multiTurnTrace({}), /bound/);
  });
});
