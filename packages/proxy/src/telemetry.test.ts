import { strict as assert } from "node:assert";
import { PassThrough } from "node:stream";
import { test } from "node:test";
import type { ServerResponse } from "node:http";
import { parseTelemetryNdjsonLine, type TelemetryStreamLine } from "@meridian/protocol";
import type { TelemetryEventBody } from "@meridian/lb-core";
import { TelemetryLog } from "./telemetry";

const sample = (i: number): TelemetryEventBody => ({
  time: 1_000 + i,
  lbId: "lb",
  region: "r",
  replicaId: "a",
  configVersion: 1,
  policy: "gorgo",
  inputTokens: i,
  predictedCachedTokens: 0,
  actualCachedTokens: null,
  ttftMs: 1,
  e2eMs: 2,
  outputTokens: 1,
  status: 200,
  error: null,
  forwarded: false,
  hop: 0,
});

/** A writable stand-in for ServerResponse that records NDJSON lines. */
function sink(): { res: ServerResponse; lines: TelemetryStreamLine[]; end: () => void } {
  const stream = new PassThrough();
  const lines: TelemetryStreamLine[] = [];
  let text = "";
  stream.on("data", (chunk: Buffer) => {
    text += chunk.toString();
    let at: number;
    while ((at = text.indexOf("\n")) >= 0) {
      lines.push(parseTelemetryNdjsonLine(text.slice(0, at)));
      text = text.slice(at + 1);
    }
  });
  return { res: stream as unknown as ServerResponse, lines, end: () => stream.destroy() };
}

test("ring keeps the newest events with gap-free seqs; a late resume gets an explicit dropped line", async () => {
  const log = new TelemetryLog(4);
  for (let i = 1; i <= 6; i++) log.append(sample(i));
  assert.equal(log.latestSeq, 6);
  assert.equal(log.oldestSeq, 3);
  assert.deepEqual(
    log.since(4).map((e) => e.seq),
    [5, 6],
  );
  const { res, lines, end } = sink();
  log.subscribe(res, 0, 60_000);
  log.append(sample(7));
  await new Promise((r) => setImmediate(r));
  // Every subscription opens with where the log stands and whose sequence it is.
  assert.deepEqual(lines[0], { type: "heartbeat", seq: 6, time: (lines[0] as { time: number }).time, boot: log.boot });
  assert.deepEqual(lines[1], { type: "dropped", fromSeq: 1, toSeq: 2, count: 2 });
  assert.deepEqual(
    lines.slice(2).map((l) => (l.type === "event" ? l.event.seq : -1)),
    [3, 4, 5, 6, 7],
  );
  end();
  log.close();
});

test("a subscriber resuming in another process's sequence (the LB restarted) gets this one's from its start", async () => {
  const before = new TelemetryLog(100);
  const restarted = new TelemetryLog(100);
  assert.notEqual(restarted.boot, before.boot);
  // The console had seen 20 events of the old process; the new one has finished 30 by the time it resumes.
  for (let i = 1; i <= 30; i++) restarted.append(sample(i));
  const { res, lines, end } = sink();
  restarted.subscribe(res, 20, 60_000, before.boot);
  await new Promise((r) => setImmediate(r));
  assert.ok(lines[0]?.type === "heartbeat" && lines[0].boot === restarted.boot && lines[0].seq === 30);
  assert.deepEqual(
    lines.flatMap((l) => (l.type === "event" ? [l.event.seq] : [])),
    Array.from({ length: 30 }, (_, i) => i + 1),
  );
  end();
  // Naming this process's own boot resumes after `since`, as without one.
  const same = sink();
  restarted.subscribe(same.res, 20, 60_000, restarted.boot);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(
    same.lines.flatMap((l) => (l.type === "event" ? [l.event.seq] : [])),
    Array.from({ length: 10 }, (_, i) => i + 21),
  );
  same.end();
  restarted.close();
  before.close();
});

test("resume from the last seen seq delivers each event exactly once", async () => {
  const log = new TelemetryLog(100);
  for (let i = 1; i <= 5; i++) log.append(sample(i));
  const first = sink();
  const sub = log.subscribe(first.res, 2, 60_000);
  await new Promise((r) => setImmediate(r));
  sub.close();
  for (let i = 6; i <= 8; i++) log.append(sample(i));
  const second = sink();
  log.subscribe(second.res, 5, 60_000);
  await new Promise((r) => setImmediate(r));
  const seqs = [...first.lines, ...second.lines].flatMap((l) => (l.type === "event" ? [l.event.seq] : []));
  assert.deepEqual(seqs, [3, 4, 5, 6, 7, 8]);
  log.close();
});
