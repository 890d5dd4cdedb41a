// Per-request records and the summary computed from them (TTFT, E2E, ITL percentiles, throughput,
// errors, per-region breakdown).

import type { ChatStreamResult } from "./stream-chat";

/** One line of the results JSONL: what the stream measured plus where and when it was sent.
 * Times are ms; `startMs` is relative to the run's start. */
export interface ReplayRecord extends ChatStreamResult {
  index: number;
  region: string;
  sessionId: string;
  turn?: number;
  /** The entrypoint the request was sent to (undefined when the region had none). */
  entrypoint?: string;
  /** When the request was due (its scaled timestamp), relative to the run's start. */
  scheduledMs: number;
  /** How late the client's scheduler got to the request (event-loop lag, trace read, synthesis). */
  scheduleLagMs: number;
  /** Generator turns only: time held until the session's previous reply had ended (a chat user
   * sends the next message after reading the reply). */
  turnWaitMs?: number;
  /** Time spent waiting for a concurrency slot (the cap was reached). */
  queueWaitMs: number;
  /** When it was actually sent, relative to the run's start. */
  startMs: number;
  /** The prompt size the workload intended (trace input_length or generator estimate). */
  inputTokens: number;
  maxTokens: number;
}

export interface Percentiles {
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

export interface RegionSummary {
  requests: number;
  ok: number;
  errors: number;
  ttftMs: Percentiles;
  e2eMs: Percentiles;
}

export interface ReplaySummary {
  requests: number;
  ok: number;
  errors: number;
  /** Requests cut off by stop() or an external abort; not counted as errors. */
  aborted: number;
  /** Trace rows not sent because their prompt exceeded maxInputTokens. */
  skippedTooLong: number;
  /** Invalid trace rows dropped while reading (onInvalid "skip", `--skip-invalid`). */
  skippedInvalid: number;
  /** From the first send to the last completion, seconds (idle time before the first send is not counted). */
  durationS: number;
  throughput: { requestsPerS: number; outputTokensPerS: number };
  ttftMs: Percentiles;
  e2eMs: Percentiles;
  /** Median over requests of each request's mean inter-delta gap. */
  itlMs: { p50: number | null };
  /** Client-side wait for a concurrency slot (open-loop overload shows up here). */
  queueWaitMs: { p50: number | null; p95: number | null; max: number };
  /** Requests that waited more than 1 ms for a slot. */
  delayedRequests: number;
  /** Client scheduling lag; a large p95 means the client itself could not keep the schedule. */
  scheduleLagMs: { p95: number | null; max: number };
  /** Generator turns held for their session's previous reply; null p95 when there were none. */
  turnWaitMs: { p95: number | null; max: number };
  tokens: { prompt: number; cached: number; output: number; cacheHitRate: number | null };
  /** Error counts by kind: "http-<status>", "network", "timeout", "no-entrypoint", "stream". */
  errorsByKind: Record<string, number>;
  byRegion: Record<string, RegionSummary>;
}

/** Nearest-rank percentile of an ascending array; null when empty. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

const round = (x: number | null): number | null => (x === null ? null : Math.round(x * 100) / 100);

function percentiles(values: number[]): Percentiles {
  values.sort((a, b) => a - b);
  return { p50: round(percentile(values, 50)), p95: round(percentile(values, 95)), p99: round(percentile(values, 99)) };
}

/** The error kind a record counts under in errorsByKind. */
export function errorKind(record: ReplayRecord): string {
  if (record.status > 0 && (record.status < 200 || record.status >= 300)) return `http-${record.status}`;
  const message = record.error ?? "";
  if (message.startsWith("no entrypoint")) return "no-entrypoint";
  if (message.startsWith("timeout")) return "timeout";
  if (message.startsWith("stream")) return "stream";
  if (message.startsWith("client queue full")) return "dropped";
  return "network";
}

export const isAborted = (record: ReplayRecord): boolean => record.error === "aborted";

/**
 * The summary of `records`. `span` is the time they cover, on the records' clock (their `startMs`):
 * durationS, and so the throughput, is its length. `fromMs` defaults to the earliest send among
 * them, not the run's start: a trace window whose timestamps are kept waits until its first row is
 * due, and that idle wait is no part of the replay's throughput.
 */
export function summarise(records: readonly ReplayRecord[], span: { toMs: number; fromMs?: number }, skippedTooLong = 0, skippedInvalid = 0): ReplaySummary {
  const ok = records.filter((r) => r.ok);
  const aborted = records.filter(isAborted).length;
  const failed = records.filter((r) => !r.ok && !isAborted(r));
  const errorsByKind: Record<string, number> = {};
  for (const r of failed) errorsByKind[errorKind(r)] = (errorsByKind[errorKind(r)] ?? 0) + 1;

  const output = ok.reduce((s, r) => s + r.outputTokens, 0);
  const prompt = ok.reduce((s, r) => s + (r.promptTokens ?? 0), 0);
  const cached = ok.reduce((s, r) => s + (r.cachedTokens ?? 0), 0);
  const waits = records.map((r) => r.queueWaitMs).sort((a, b) => a - b);
  const lags = records.map((r) => r.scheduleLagMs).sort((a, b) => a - b);
  const turnWaits = records.flatMap((r) => (r.turnWaitMs === undefined ? [] : [r.turnWaitMs])).sort((a, b) => a - b);
  // With no records, nothing was sent: the run's whole span.
  const firstSendMs = records.length > 0 ? records.reduce((first, r) => Math.min(first, r.startMs), Number.POSITIVE_INFINITY) : 0;
  const durationS = Math.max(span.toMs - (span.fromMs ?? firstSendMs), 1) / 1000;

  const byRegion: Record<string, RegionSummary> = {};
  for (const region of [...new Set(records.map((r) => r.region))].sort()) {
    const mine = records.filter((r) => r.region === region && !isAborted(r));
    const mineOk = mine.filter((r) => r.ok);
    byRegion[region] = {
      requests: mine.length,
      ok: mineOk.length,
      errors: mine.length - mineOk.length,
      ttftMs: percentiles(mineOk.flatMap((r) => (r.ttftMs === undefined ? [] : [r.ttftMs]))),
      e2eMs: percentiles(mineOk.flatMap((r) => (r.e2eMs === undefined ? [] : [r.e2eMs]))),
    };
  }

  const itl = ok.flatMap((r) => (r.itlMeanMs === undefined ? [] : [r.itlMeanMs])).sort((a, b) => a - b);
  return {
    requests: records.length,
    ok: ok.length,
    errors: failed.length,
    aborted,
    skippedTooLong,
    skippedInvalid,
    durationS: Math.round(durationS * 1000) / 1000,
    throughput: {
      requestsPerS: Math.round((ok.length / durationS) * 1000) / 1000,
      outputTokensPerS: Math.round((output / durationS) * 10) / 10,
    },
    ttftMs: percentiles(ok.flatMap((r) => (r.ttftMs === undefined ? [] : [r.ttftMs]))),
    e2eMs: percentiles(ok.flatMap((r) => (r.e2eMs === undefined ? [] : [r.e2eMs]))),
    itlMs: { p50: round(percentile(itl, 50)) },
    queueWaitMs: { p50: round(percentile(waits, 50)), p95: round(percentile(waits, 95)), max: round(waits.at(-1) ?? 0) ?? 0 },
    delayedRequests: records.filter((r) => r.queueWaitMs > 1).length,
    scheduleLagMs: { p95: round(percentile(lags, 95)), max: round(lags.at(-1) ?? 0) ?? 0 },
    turnWaitMs: { p95: round(percentile(turnWaits, 95)), max: round(turnWaits.at(-1) ?? 0) ?? 0 },
    tokens: { prompt, cached, output, cacheHitRate: prompt > 0 ? Math.round((cached / prompt) * 10000) / 10000 : null },
    errorsByKind,
    byRegion,
  };
}
