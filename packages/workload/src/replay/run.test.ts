import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { stubsClosedAfter } from "../../test/sse-stub";
import { bundledTracePath } from "../trace/bundled";
import type { TraceRowError } from "../trace/reader";
import type { TraceRequest } from "../trace/types";
import { runReplay, startLoadGenerator } from "./run";
import { percentile, type ReplayRecord, type ReplaySummary } from "./stats";

const stub = stubsClosedAfter();

// A run's signal has a listener per request in flight, each removed when it ends: no run in this
// file may make Node warn of a listener leak (it did with more than 10 requests at once).
const leakWarnings: string[] = [];
const onWarning = (warning: Error): void => {
  if (warning.name === "MaxListenersExceededWarning") leakWarnings.push(warning.message);
};
process.on("warning", onWarning);
after(() => {
  process.off("warning", onWarning);
  assert.deepEqual(leakWarnings, []);
});

/** Waits until `count()` has not changed for 300 ms (at most 5 s). */
async function settle(count: () => number): Promise<void> {
  let last = -1;
  for (let waited = 0; waited < 5000 && count() !== last; waited += 300) {
    last = count();
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

const rows = (timestamps: number[], outputTokens = 4): TraceRequest[] =>
  timestamps.map((t, i) => ({
    index: i,
    timestampMs: t,
    sourceTimestampMs: t,
    inputTokens: 300,
    outputTokens,
    hashIds: [0, 100 + i],
    blockTokens: 512,
    format: "mooncake",
  }));

describe("replay client", () => {
  it("measures TTFT to the first content delta, ITL, and usage with cached tokens", async () => {
    const s = await stub({ firstContentDelayMs: 120, gapMs: 30, deltas: 4, cachedTokens: 77 });
    const records: ReplayRecord[] = [];
    const summary = await runReplay({ trace: rows([0]), entrypoints: { "us-ashburn": s.url }, onRecord: (r) => records.push(r) });
    const r = records[0]!;
    assert.equal(r.ok, true, r.error);
    assert.equal(r.status, 200);
    // Lower bounds only: the first content cannot arrive before the stub sends it, but a loaded
    // machine can delay (and coalesce) what the client reads.
    assert.ok(r.ttftMs! >= 110, `ttft ${r.ttftMs} must wait for content, not the role chunk`);
    assert.ok(r.e2eMs! >= r.ttftMs!);
    assert.ok(r.itlMeanMs !== undefined && r.itlMeanMs >= 0, `itl ${r.itlMeanMs}`);
    assert.equal(r.contentDeltas, 4);
    assert.equal(r.outputTokens, 4);
    assert.equal(r.cachedTokens, 77);
    assert.ok(r.promptTokens! > 0);
    assert.equal(r.entrypoint, s.url);
    assert.equal(summary.ok, 1);
    assert.equal(summary.tokens.cached, 77);
    assert.ok(summary.ttftMs.p50! >= 110);
    assert.deepEqual(Object.keys(summary.byRegion), ["us-ashburn"]);
  });

  it("sends a streaming chat request with usage, the client region and the session key", async () => {
    const s = await stub({ fragmented: true });
    const summary = await runReplay({ trace: rows([0, 0]), entrypoints: { "eu-frankfurt": s.url }, model: "m1", maxOutputTokens: 2 });
    assert.equal(summary.ok, 2);
    const sent = s.received[0]!;
    assert.equal(sent.headers["x-meridian-client-region"], "eu-frankfurt");
    assert.equal(sent.headers["x-session-id"], "0/100");
    assert.equal(sent.body.stream, true);
    assert.deepEqual(sent.body.stream_options, { include_usage: true });
    assert.equal(sent.body.model, "m1");
    assert.equal(sent.body.max_tokens, 2);
    assert.deepEqual(
      sent.body.messages.map((m) => m.role),
      ["system", "user"],
    );
    assert.equal(summary.tokens.output, 4, "CRLF and events split across writes still parse");
  });

  it("skips trace rows longer than maxInputTokens and counts them", async () => {
    const s = await stub();
    const long = rows([0, 0, 0]);
    long[1]!.inputTokens = 30_000;
    const summary = await runReplay({ trace: long, entrypoints: { r: s.url }, maxInputTokens: 24_000 });
    assert.equal(summary.requests, 2);
    assert.equal(summary.skippedTooLong, 1);
  });

  it("counts invalid trace rows dropped with onInvalid skip as skippedInvalid", async () => {
    const s = await stub();
    const dir = await mkdtemp(join(tmpdir(), "wl-replay-"));
    const path = join(dir, "trace.jsonl");
    const row = (t: number) => JSON.stringify({ timestamp: t, input_length: 300, output_length: 2, hash_ids: [0, 1] });
    await writeFile(path, [row(0), "{oops", JSON.stringify({ timestamp: 1, hash_ids: [0] }), row(2)].join("\n"));
    try {
      const seen: TraceRowError[] = [];
      const summary = await runReplay({
        trace: path,
        traceRead: { onInvalid: "skip", onSkip: (e) => seen.push(e) },
        entrypoints: { r: s.url },
      });
      assert.equal(summary.requests, 2);
      assert.equal(summary.ok, 2);
      assert.equal(summary.skippedInvalid, 2);
      assert.deepEqual(
        seen.map((e) => e.line),
        [2, 3],
        "the caller's onSkip still sees each row",
      );
      const clean = await runReplay({ trace: rows([0]), entrypoints: { r: s.url } });
      assert.equal(clean.skippedInvalid, 0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("counts a 200 that is not an event stream as a stream error, not a success", async () => {
    const server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "model overloaded" } }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const records: ReplayRecord[] = [];
      const summary = await runReplay({
        trace: rows([0, 0]),
        entrypoints: { us: `http://127.0.0.1:${(server.address() as AddressInfo).port}` },
        onRecord: (r) => records.push(r),
      });
      assert.equal(summary.requests, 2);
      assert.equal(summary.ok, 0);
      assert.equal(summary.errors, 2);
      assert.deepEqual(summary.errorsByKind, { stream: 2 });
      assert.equal(summary.throughput.requestsPerS, 0);
      assert.equal(records[0]?.error, "stream: response was not an event stream (content-type application/json): model overloaded");
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("caps concurrency open-loop and records the wait for a slot", async () => {
    const s = await stub({ firstContentDelayMs: 100, deltas: 1 });
    const records: { queueWaitMs: number }[] = [];
    const summary = await runReplay({ trace: rows(Array(9).fill(0)), entrypoints: { r: s.url }, concurrency: 3, onRecord: (r) => records.push(r) });
    assert.equal(summary.ok, 9);
    assert.equal(s.maxActive, 3);
    const waited = records.filter((r) => r.queueWaitMs >= 80).length;
    assert.equal(waited, 6, `six requests wait for a slot: ${records.map((r) => r.queueWaitMs.toFixed(0))}`);
    assert.equal(summary.delayedRequests >= 6, true);
    assert.ok(summary.queueWaitMs.max >= 180);
  });

  it("sends at timestamp × time scale and stops at max requests", async () => {
    const s = await stub();
    const records: { scheduledMs: number; startMs: number }[] = [];
    const summary = await runReplay({
      trace: rows([0, 100, 200, 300]),
      timeScale: 0.5,
      maxRequests: 3,
      entrypoints: { r: s.url },
      onRecord: (r) => records.push(r),
    });
    assert.equal(summary.requests, 3);
    assert.deepEqual(
      records.map((r) => r.scheduledMs).sort((a, b) => a - b),
      [0, 50, 100],
    );
    for (const r of records) assert.ok(r.startMs >= r.scheduledMs && r.startMs < r.scheduledMs + 1000, `${r.startMs} vs ${r.scheduledMs}`);
  });

  it("follows an entrypoint map URL that changes (failover)", async () => {
    const a = await stub();
    const b = await stub();
    const console = await stub();
    console.map = { entrypoints: { "us-ashburn": a.url } };
    // Fail over once the first three requests are done; the next ones are due 1.4 s later.
    let done = 0;
    const onRecord = (): void => {
      if (++done === 3) console.map = { "us-ashburn": { url: b.url } };
    };
    const summary = await runReplay({ trace: rows([0, 50, 100, 1500, 1550, 1600]), entrypoints: `${console.url}/map`, refreshMs: 40, onRecord });
    assert.equal(summary.ok, 6);
    assert.equal(a.received.length, 3);
    assert.equal(b.received.length, 3);
    assert.ok(console.mapHits >= 3);
  });

  it("reports HTTP errors and regions without an entrypoint", async () => {
    const s = await stub({ failStatus: 503 });
    const records: { error?: string }[] = [];
    const summary = await runReplay({
      trace: rows([0, 0, 0, 0, 0, 0, 0, 0]),
      entrypoints: { a: s.url, b: s.url },
      regionWeights: { a: 1, missing: 1 },
      onRecord: (r) => records.push(r),
    });
    assert.equal(summary.ok, 0);
    assert.equal(summary.errors, 8);
    const http = summary.errorsByKind["http-503"] ?? 0;
    const missing = summary.errorsByKind["no-entrypoint"] ?? 0;
    assert.equal(http + missing, 8);
    assert.ok(http > 0 && missing > 0);
    assert.ok(records.some((r) => r.error === "HTTP 503: stub overloaded"));
    assert.equal(summary.byRegion.missing?.errors, missing);
  });

  it("replays the bundled trace window with region weights and writes JSONL + summary", async () => {
    const s = await stub();
    const dir = await mkdtemp(join(tmpdir(), "wl-replay-"));
    try {
      const summary = await runReplay({
        trace: bundledTracePath(),
        fromMs: 0,
        toMs: 10_000,
        timeScale: 0.01,
        entrypoints: { "us-ashburn": s.url, "ap-seoul": s.url },
        regionWeights: { "us-ashburn": 1, "ap-seoul": 1 },
        outPath: join(dir, "out.jsonl"),
        summaryPath: join(dir, "summary.json"),
      });
      const lines = (await readFile(join(dir, "out.jsonl"), "utf8")).trim().split("\n");
      assert.equal(lines.length, summary.requests);
      assert.ok(summary.requests > 20 && summary.ok === summary.requests);
      assert.deepEqual(JSON.parse(await readFile(join(dir, "summary.json"), "utf8")), summary);
      assert.deepEqual(Object.keys(summary.byRegion), ["ap-seoul", "us-ashburn"]);
      const first = JSON.parse(lines[0]!) as { inputTokens: number };
      assert.ok(first.inputTokens > 0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("sends a generator session's next turn only after the previous reply has ended, and records the hold", async () => {
    // Replies take a while (40 ms to the first token) and turns are due every few ms: open-loop, a
    // session's turn 2 went out while reply 1 was still streaming, which no chat client does.
    const s = await stub({ firstContentDelayMs: 40, gapMs: 10, deltas: 3 });
    const records: ReplayRecord[] = [];
    const summary = await runReplay({
      entrypoints: { a: s.url },
      generator: { seed: 2, ratePerS: 100, sessions: 3, turns: { min: 4, max: 4 }, maxRequests: 24 },
      onRecord: (r) => records.push(r),
    });
    assert.equal(summary.ok, 24);
    const bySession = new Map<string, ReplayRecord[]>();
    for (const r of records) bySession.set(r.sessionId, [...(bySession.get(r.sessionId) ?? []), r]);
    const early: string[] = [];
    for (const [session, turns] of bySession) {
      turns.sort((x, y) => x.turn! - y.turn!);
      for (let k = 1; k < turns.length; k++) {
        const replyEnded = turns[k - 1]!.startMs + turns[k - 1]!.e2eMs!;
        if (turns[k]!.startMs < replyEnded)
          early.push(`${session} turn ${turns[k]!.turn} sent at ${turns[k]!.startMs.toFixed(0)} ms, reply ended ${replyEnded.toFixed(0)}`);
      }
    }
    assert.deepEqual(early, []);
    assert.ok(
      records.every((r) => (r.turn === 1) === (r.turnWaitMs === undefined)),
      "every later turn records its hold",
    );
    assert.ok(summary.turnWaitMs.max > 0, "turns were held");
  });

  it("runs the multi-turn load generator until stop()", async () => {
    const s = await stub({ gapMs: 5, deltas: 3 });
    const records: ReplayRecord[] = [];
    const generator = startLoadGenerator({
      entrypoints: { "us-ashburn": s.url, "eu-frankfurt": s.url },
      generator: { ratePerS: 100, sessions: 4, seed: 2 },
      onRecord: (r) => records.push(r),
    });
    let summary: ReplaySummary;
    try {
      // Poll rather than sleep a fixed time: a loaded machine may be slow to get going.
      for (let waited = 0; records.filter((r) => r.ok).length < 6 && waited < 10_000; waited += 20) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.ok(generator.summary().requests > 0);
    } finally {
      summary = await generator.stop();
    }
    assert.ok(summary.ok >= 6, `ok ${summary.ok}`);
    assert.equal(summary.errors, 0);
    const regions = new Set(s.received.map((r) => r.headers["x-meridian-client-region"]));
    assert.deepEqual([...regions].sort(), ["eu-frankfurt", "us-ashburn"]);
    const turns = s.received.map((r) => r.body.messages.length);
    assert.ok(
      turns.some((n) => n > 2),
      "later turns carry the conversation so far",
    );
    // Requests already on the wire at stop() may still reach the stub (slowly, on a loaded
    // machine), but every request the client sent has a record, and no record comes after stop().
    const recorded = records.length;
    assert.equal(recorded, summary.requests);
    await settle(() => s.received.length);
    assert.equal(records.length, recorded, "no records after stop() resolved");
    assert.ok(s.received.length <= recorded, `nothing is sent after stop(): ${s.received.length} received, ${recorded} sent`);
  });

  it("the load generator's summary() covers exactly the most recent keepRecords requests", async () => {
    const s = await stub({ deltas: 1 });
    const seen: number[] = [];
    const generator = startLoadGenerator({
      entrypoints: { r: s.url },
      keepRecords: 3,
      maxRequests: 6,
      concurrency: 1,
      generator: { ratePerS: 200, sessions: 6 },
      // Asked right after each record is kept (onRecord runs before it is).
      onRecord: () => queueMicrotask(() => seen.push(generator.summary().requests)),
    });
    const final = await generator.done;
    assert.deepEqual(seen, [1, 2, 3, 3, 3, 3]);
    assert.equal(final.requests, 3);
  });

  it("the load generator waits for a non-empty entrypoint map, then follows it", async () => {
    const engine = await stub();
    const console = await stub();
    console.map = {};
    const records: ReplayRecord[] = [];
    const generator = startLoadGenerator({
      entrypoints: `${console.url}/map`,
      refreshMs: 30,
      generator: { ratePerS: 200, seed: 5 },
      onRecord: (r) => records.push(r),
    });
    let summary: ReplaySummary;
    try {
      // It keeps asking while the map is empty, and sends nothing meanwhile.
      for (let waited = 0; console.mapHits < 2 && waited < 10_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.ok(console.mapHits >= 2, "it keeps asking");
      assert.equal(engine.received.length, 0);
      console.map = { "ap-seoul": engine.url };
      for (let waited = 0; records.filter((r) => r.ok).length < 5 && waited < 10_000; waited += 20) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      summary = await generator.stop();
    }
    assert.ok(summary.ok >= 5, `ok ${summary.ok}`);
    assert.deepEqual(Object.keys(summary.byRegion), ["ap-seoul"]);
  });

  it("a throwing onRecord fails the run instead of vanishing", async () => {
    const s = await stub();
    await assert.rejects(
      runReplay({
        trace: rows([0]),
        entrypoints: { r: s.url },
        onRecord: () => {
          throw new Error("sink broke");
        },
      }),
      { message: "sink broke" },
    );
  });

  it("percentile is nearest-rank", () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    assert.equal(percentile(xs, 50), 50);
    assert.equal(percentile(xs, 95), 95);
    assert.equal(percentile(xs, 99), 99);
    assert.equal(percentile([], 50), null);
    assert.equal(percentile([7], 99), 7);
  });

  it("a signal already aborted when the run starts sends nothing, and a load generator given one ends by itself", async () => {
    const s = await stub();
    const summary = await runReplay({ trace: rows([0, 200, 400, 600, 800]), entrypoints: { r: s.url }, signal: AbortSignal.abort() });
    assert.equal(s.received.length, 0, "requests were sent although the caller had already aborted");
    assert.equal(summary.ok, 0);
    const generator = startLoadGenerator({ entrypoints: { r: s.url }, generator: { ratePerS: 50 }, signal: AbortSignal.abort() });
    await generator.done; // ends without stop(): before the fix it ran until stopped
    assert.equal(s.received.length, 0);
  });
});
