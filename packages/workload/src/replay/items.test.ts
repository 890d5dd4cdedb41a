// What the replay sends for a trace: generator rows held turn by turn as the simulator holds them,
// unsorted rows in the simulator's order, and rows with more hash ids than their input_length reaches replayed.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { stubsClosedAfter } from "../../test/sse-stub";
import { multiTurnTrace } from "../generator/multi-turn";
import { TurnChain } from "../generator/turns";
import { parseTraceText } from "../trace/reader";
import { toolAgentTrace } from "../testing/tool-agent-trace";
import { type ReplayItem, traceItems } from "./items";
import { runReplay } from "./run";
import type { ReplayRecord } from "./stats";

const stub = stubsClosedAfter();

describe("replay items", () => {
  it("keys a tool-agent trace's rows by conversation, not by the tool prompt most rows share, and draws regions from it", async () => {
    const { rows, conversationOf } = toolAgentTrace();
    const weights = { a: 2, b: 1, c: 1 };
    const items: ReplayItem[] = [];
    for await (const item of traceItems(rows, {}, weights, { tooLong: 0, invalid: 0 })) items.push(item);
    const sessions = new Set(items.map((i) => i.sessionId));
    // 400 conversations, 340 of them behind one 24-block tool prompt (before: 341 sessions in all, 85 % of the rows in one).
    assert.equal(sessions.size, new Set(conversationOf).size);
    const counts = new Map<string, number>();
    for (const item of items) counts.set(item.region, (counts.get(item.region) ?? 0) + 1);
    for (const [region, w] of Object.entries(weights)) {
      const got = (counts.get(region) ?? 0) / items.length;
      assert.ok(Math.abs(got - w / 4) < 0.08, `region ${region}: ${got.toFixed(3)} of the requests, weight ${w / 4}`);
    }
  });

  it("holds a session's next turn when generator rows are replayed as a trace, as the simulator does", async () => {
    const s = await stub({ firstContentDelayMs: 300, deltas: 2 });
    const rows = multiTurnTrace({ maxRequests: 2, sessions: 1, ratePerS: 50, turns: { min: 4, max: 4 }, regions: { r: 1 } });
    // The simulator's rule for these rows: turn 2 waits for turn 1.
    const chain = new TurnChain<number>();
    chain.sent(rows[0]!, 0);
    assert.equal(chain.previous(rows[1]!), 0);
    const records: ReplayRecord[] = [];
    await runReplay({ trace: rows, entrypoints: { r: s.url }, onRecord: (r) => records.push(r) });
    records.sort((a, b) => a.index - b.index);
    const [first, second] = records as [ReplayRecord, ReplayRecord];
    assert.ok(first.ok && second.ok, `${first.error} ${second.error}`);
    const firstEnd = first.startMs + first.e2eMs!;
    assert.ok(second.startMs >= firstEnd - 1, `turn 2 sent at ${second.startMs.toFixed(0)} ms, turn 1 streamed until ${firstEnd.toFixed(0)} ms`);
    assert.ok(second.turnWaitMs !== undefined && second.turnWaitMs > 0, `turnWaitMs ${second.turnWaitMs}`);
  });

  it("sends an unsorted trace in the simulator's order, from its earliest row, with no schedule lag", async () => {
    const s = await stub({ deltas: 1 });
    const text = [300, 100, 400].map((t) => JSON.stringify({ timestamp: t, input_length: 600, output_length: 1, hash_ids: [0, t] })).join("\n");
    const rows = parseTraceText(text);
    const records: ReplayRecord[] = [];
    const summary = await runReplay({ trace: rows, concurrency: 1, entrypoints: { r: s.url }, onRecord: (r) => records.push(r) });
    // Sent earliest first (the simulator's order, inSendOrder), each at its offset from the earliest.
    assert.deepEqual(
      [...records].sort((a, b) => a.startMs - b.startMs).map((r) => [r.index, r.scheduledMs]),
      [
        [1, 0],
        [0, 200],
        [2, 300],
      ],
    );
    assert.ok(summary.scheduleLagMs.max < 100, `scheduleLagMs.max ${summary.scheduleLagMs.max} ms`);
  });

  it("replays a row with far more hash ids than its input_length: its prompt is built from the blocks input_length reaches", async () => {
    const s = await stub();
    const dir = await mkdtemp(join(tmpdir(), "wl-items-"));
    const path = join(dir, "t.jsonl");
    const good = (t: number) => JSON.stringify({ timestamp: t, input_length: 600, output_length: 2, hash_ids: [0, 1] });
    const long = JSON.stringify({ timestamp: 1, input_length: 10, output_length: 2, hash_ids: new Array(300_000).fill(0) });
    await writeFile(path, [good(0), long, good(2)].join("\n"));
    try {
      // Before, building all 300k blocks before trimming crashed the run ("Invalid string length").
      const summary = await runReplay({ trace: path, entrypoints: { r: s.url } });
      assert.equal(summary.ok, 3);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
