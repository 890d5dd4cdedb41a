// A chat user sends a session's next turn only once the previous reply has reached them: the
// simulator's clients hold a generator turn as the live replay does (turnWaitMs), and leave trace rows
// (no turn order) open loop.
import assert from "node:assert/strict";
import { test } from "node:test";
import { bundledTracePath, loadTrace, multiTurnTrace } from "@meridian/workload";
import { buildSimRequests, paperFleet, simulateFleet, type SimRequest } from "./index";

test("a generator session's turn is sent only after its previous reply reached the client; trace rows stay open loop", async () => {
  const spec = paperFleet();
  // Four sessions sharing 20 requests a second: each session's next turn is due ~200 ms after its
  // previous one, long before a reply of 64-256 tokens has ended.
  const rows = multiTurnTrace({ seed: 3, ratePerS: 20, sessions: 4, turns: { min: 5, max: 5 }, maxRequests: 40 });
  const { requests } = buildSimRequests(rows, spec);
  const result = simulateFleet(spec, requests, { policy: "gorgo", seed: 1, recordRequests: true });
  assert.equal(result.summary.completed + result.summary.failed, requests.length);
  assert.ok(result.records !== undefined && result.refused !== undefined);
  const sessionOf = (id: number) => rows[requests[id]!.traceIndex]!.sessionId!;
  const bySession = new Map<string, { id: number; sentMs: number; answeredMs: number; waitMs: number | undefined }[]>();
  for (const r of result.records) {
    const turns = bySession.get(sessionOf(r.id)) ?? [];
    turns.push({ id: r.id, sentMs: r.arrival_ms, answeredMs: r.arrival_ms + r.e2e_ms, waitMs: r.turn_wait_ms });
    bySession.set(sessionOf(r.id), turns);
  }
  assert.equal(result.refused.length, 0, "the fleet serves this light load");
  assert.ok(bySession.size >= 4);
  const early: string[] = [];
  for (const [session, turns] of bySession) {
    turns.sort((a, b) => a.id - b.id);
    for (let k = 1; k < turns.length; k++) {
      const prev = turns[k - 1]!;
      const turn = turns[k]!;
      // arrival + e2e re-adds what e2e subtracted: equal up to float rounding.
      if (turn.sentMs < prev.answeredMs - 1e-6)
        early.push(
          `${session}: request ${turn.id} sent at ${turn.sentMs.toFixed(0)} ms, reply ${prev.id} reached the client at ${prev.answeredMs.toFixed(0)} ms`,
        );
    }
  }
  assert.deepEqual(early, []);
  // The hold is reported: what each later turn's send time moved past its due time.
  let held = 0;
  for (const [session, turns] of bySession) {
    assert.equal(turns[0]!.waitMs, undefined, `${session}: a first turn waits for nothing`);
    for (const turn of turns.slice(1)) {
      assert.equal(turn.waitMs, turn.sentMs - requests[turn.id]!.arrivalMs);
      if (turn.waitMs! > 0) held++;
    }
  }
  assert.ok(held > 0, "some turns were held");
  const wait = result.summary.turn_wait_ms;
  assert.ok(wait !== undefined && wait.max > 0 && wait.p95 <= wait.max, `turn_wait_ms ${JSON.stringify(wait)}`);

  // Trace rows: every request goes at its own time and no hold is reported.
  const trace = buildSimRequests(await loadTrace(bundledTracePath(), { toMs: 30_000 }), spec).requests;
  assert.ok(trace.every((r) => r.afterId === undefined));
  const open = simulateFleet(spec, trace, { policy: "gorgo", seed: 1, recordRequests: true });
  assert.equal(open.summary.turn_wait_ms, undefined);
  assert.ok(open.records!.every((r) => r.arrival_ms === trace[r.id]!.arrivalMs && r.turn_wait_ms === undefined));
});

test("a turn waiting for a request that is not an earlier one of the workload is a clear error", () => {
  const spec = paperFleet();
  const { requests } = buildSimRequests(multiTurnTrace({ seed: 3, ratePerS: 20, sessions: 2, turns: { min: 3, max: 3 }, maxRequests: 6 }), spec);
  const second = requests.findIndex((r) => r.afterId !== undefined);
  assert.ok(second > 0);
  // Cut from the workload without its previous turn, and renumbered: the hold cannot be honoured.
  const cut: SimRequest[] = requests.slice(second).map((r, id) => ({ ...r, id }));
  assert.throws(() => simulateFleet(spec, cut, { policy: "gorgo", seed: 1 }), /waits for request \d+, which is not an earlier request/);
});
