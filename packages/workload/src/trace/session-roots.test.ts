import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { multiTurnTrace } from "../generator/multi-turn";
import { bundledTracePath } from "./bundled";
import { assignRegion } from "./controls";
import { loadTrace } from "./reader";
import { SHARED_PREFIX_SHARE, sessionKeyOf, sessionRoots } from "./session-roots";
import { toolAgentTrace, TOOL_PROMPT } from "../testing/tool-agent-trace";

const largestShare = (keys: readonly string[]): number => {
  const counts = new Map<string, number>();
  for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
  return Math.max(...counts.values()) / keys.length;
};

describe("sessionRoots", () => {
  it("keys the conversation trace on its first two ids, as before (block 0 is every row's system prompt)", async () => {
    const rows = await loadTrace(bundledTracePath());
    const roots = sessionRoots(rows);
    assert.deepEqual(
      roots.map((r) => r.id),
      rows.map((r) => sessionKeyOf(r.hashIds, 2)),
    );
    assert.ok(roots.every((r) => r.blocks === 2));
    assert.equal(sessionKeyOf([0, 14, 15, 16], 2), "0/14");
    assert.equal(sessionKeyOf(["ab", "cd", "ef"], 2), "ab/cd");
  });

  it("keys a tool-agent trace on the first block after the shared tool prompt: many sessions, regions near their weights", () => {
    const { rows, conversationOf } = toolAgentTrace();
    const roots = sessionRoots(rows);
    // Every turn of a conversation has one key, and no two conversations share one.
    const keyOf = new Map<number, string>();
    const conversationOfKey = new Map<string, number>();
    for (const [i, root] of roots.entries()) {
      const c = conversationOf[i]!;
      assert.equal(root.id, keyOf.get(c) ?? root.id, `conversation ${c} has one key`);
      assert.equal(c, conversationOfKey.get(root.id) ?? c, `key ${root.id} is one conversation's`);
      keyOf.set(c, root.id);
      conversationOfKey.set(root.id, c);
    }
    assert.ok(largestShare(roots.map((r) => r.id)) <= SHARED_PREFIX_SHARE, "no session holds more than the shared share");
    assert.ok(roots.some((r) => r.blocks === TOOL_PROMPT.length + 1));
    const weights = { a: 2, b: 1, c: 1 };
    const counts: Record<string, number> = { a: 0, b: 0, c: 0 };
    for (const root of roots) counts[assignRegion(root.id, weights)]!++;
    for (const [region, w] of Object.entries(weights)) {
      const got = counts[region]! / rows.length;
      assert.ok(Math.abs(got - w / 4) < 0.08, `region ${region}: ${got.toFixed(3)} of the rows, weight ${w / 4}`);
    }
  });

  it("a trace that shares no block (Mooncake's synthetic shape) keeps its first-two-id keys, so its regions stay as drawn before", () => {
    // 40 conversations of 3 turns, each starting with a block of its own; two pairs share a first block.
    const rows = Array.from({ length: 120 }, (_, i) => {
      const c = Math.floor(i / 3);
      const first = c < 4 ? 1_000 + Math.floor(c / 2) : c;
      return { hashIds: [first, 2_000 + c, ...Array.from({ length: (i % 3) + 1 }, (_, k) => 3_000 + c * 10 + k)] };
    });
    assert.deepEqual(
      sessionRoots(rows).map((r) => r.id),
      rows.map((r) => sessionKeyOf(r.hashIds, 2)),
    );
  });

  it("a row shorter than the shared prompt keys apart from the conversations that follow the prompt", () => {
    const { rows } = toolAgentTrace();
    const short = { ...rows[0]!, index: rows.length, hashIds: TOOL_PROMPT.slice(0, 10) };
    const roots = sessionRoots([...rows, short]);
    const last = roots.at(-1)!;
    // It never reaches the block where the conversations part, so it keeps the shortest key.
    assert.deepEqual(last, { blocks: 2, id: sessionKeyOf(TOOL_PROMPT, 2) });
    assert.ok(roots.slice(0, -1).every((r) => r.id !== last.id));
  });

  it("a long conversation is one session in any window: its turns' last blocks differ, and it still does not part", () => {
    // Block 0 shared by all; one conversation of 60 turns among 40 one-turn conversations. Each turn
    // ends in a partial block of its own id, then the next turn holds that block full (another id).
    const long = Array.from({ length: 60 }, (_, t) => ({ hashIds: [0, 7, ...Array.from({ length: t }, (_, k) => 100 + k), 10_000 + t] }));
    const others = Array.from({ length: 40 }, (_, c) => ({ hashIds: [0, 200 + c, 20_000 + c] }));
    const roots = sessionRoots([...long, ...others]);
    assert.deepEqual(new Set(roots.slice(0, 60).map((r) => r.id)), new Set(["0/7"]), "the 60 turns are one session");
    assert.equal(new Set(roots.slice(60).map((r) => r.id)).size, 40);
  });

  it("a single-row trace is one session keyed on its first two blocks; a row with no ids gets an empty key", () => {
    const { rows } = toolAgentTrace();
    assert.deepEqual(sessionRoots([rows[0]!]), [{ blocks: 2, id: sessionKeyOf(rows[0]!.hashIds, 2) }]);
    assert.deepEqual(sessionRoots([{ hashIds: [] }, { hashIds: [7] }, { hashIds: [7, 8, 9] }]), [
      { blocks: 0, id: "" },
      { blocks: 1, id: "7" },
      { blocks: 2, id: "7/8" },
    ]);
    assert.deepEqual(sessionRoots([]), []);
  });

  it("a short trace holding one conversation's turns, each extending the last, is one session", () => {
    const turn = (blocks: number) => ({ hashIds: Array.from({ length: blocks }, (_, k) => k + 1) });
    const roots = sessionRoots([turn(4), turn(8), turn(12)]);
    assert.deepEqual(new Set(roots.map((r) => r.id)), new Set(["1/2"]));
    // Two conversations after one shared block part after it: two sessions, as on the conversation trace.
    assert.deepEqual(
      sessionRoots([{ hashIds: [0, 1, 2] }, { hashIds: [0, 5, 6] }]).map((r) => r.id),
      ["0/1", "0/5"],
    );
  });

  it("rows that share a long document and end in one of a few questions part there: a session per question", () => {
    const doc = Array.from({ length: 30 }, (_, k) => 9_000 + k);
    const rows = Array.from({ length: 400 }, (_, i) => ({ hashIds: [...doc, 50_000 + (i % 20)] }));
    const roots = sessionRoots(rows);
    assert.equal(new Set(roots.map((r) => r.id)).size, 20);
    assert.ok(roots.every((r) => r.blocks === doc.length + 1));
  });

  it("many rows that end right after a shared prefix stay apart, though one row goes on past it", () => {
    const doc = Array.from({ length: 30 }, (_, k) => 9_000 + k);
    const questions = Array.from({ length: 300 }, (_, q) => ({ hashIds: [...doc, 50_000 + q] }));
    const long = { hashIds: [...doc, 60_000, 60_001] };
    const roots = sessionRoots([...questions, long]);
    assert.equal(new Set(roots.map((r) => r.id)).size, 301, "a session per question, the long one too");
    // Companion calls that send half a tool prompt and a tail of their own, beside the agents.
    const { rows } = toolAgentTrace();
    const calls = Array.from({ length: 60 }, (_, c) => ({ hashIds: [...TOOL_PROMPT.slice(0, 12), 70_000 + c] }));
    const all = sessionRoots([...rows, ...calls]);
    assert.equal(new Set(all.slice(rows.length).map((r) => r.id)).size, 60);
    assert.ok(largestShare(all.map((r) => r.id)) <= SHARED_PREFIX_SHARE);
  });

  it("counts a generator session once: a run of a few sessions keys each on its own two blocks", () => {
    const rows = multiTurnTrace({ seed: 3, ratePerS: 20, sessions: 2, turns: { min: 4, max: 4 }, maxRequests: 8 });
    // A few sessions, each in several turns: counted per row, a session's own prefix would look shared.
    assert.ok(largestShare(rows.map((r) => r.sessionId!)) >= 0.375);
    assert.deepEqual(
      sessionRoots(rows).map((r) => r.id),
      rows.map((r) => sessionKeyOf(r.hashIds, 2)),
    );
  });

  it("a fixed depth keeps its meaning; a bad depth or share is a clear error", () => {
    const { rows } = toolAgentTrace();
    const roots = sessionRoots(rows, { blocks: 3 });
    assert.deepEqual(
      roots.map((r) => r.id),
      rows.map((r) => sessionKeyOf(r.hashIds, 3)),
    );
    assert.throws(() => sessionRoots(rows, { blocks: 0 }), /positive integer, got 0/);
    assert.throws(() => sessionRoots(rows, { sharedShare: 1 }), /between 0 and 1, got 1/);
  });
});
