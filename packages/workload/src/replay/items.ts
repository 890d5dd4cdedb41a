// What the replay sends: trace rows or generator requests turned into ReplayItems (due time,
// region, session, messages). Trace rows are read whole and sent in the simulator's order
// (inSendOrder), so an unsorted trace is the same workload live and simulated.
import { createMultiTurnWorkload, type MultiTurnOptions } from "../generator/multi-turn";
import { traceMessages, type ChatMessage } from "../prompt/synth";
import { assignRegion, createTraceTransform, inSendOrder, type RegionWeights, type TraceControls } from "../trace/controls";
import { readTrace, type TraceReadOptions } from "../trace/reader";
import { sessionRoots } from "../trace/session-roots";
import type { TraceFormat, TraceRequest } from "../trace/types";

/** One request as the runner sends it. */
export interface ReplayItem {
  index: number;
  /** Due time, ms after the run starts. */
  atMs: number;
  region: string;
  sessionId: string;
  /** Generator requests: the 1-based turn within the session. */
  turn?: number;
  /** Trace rows: their format; "multi-turn" rows (multiTurnTrace) are a session's turns, held like the generator's. */
  format?: TraceFormat;
  messages: ChatMessage[];
  maxTokens: number;
  inputTokens: number;
}

/** Trace rows read but not sent. */
export interface Skipped {
  /** Longer than maxInputTokens. */
  tooLong: number;
  /** Invalid rows dropped by the reader (onInvalid "skip"). */
  invalid: number;
}

export interface TraceItemsOptions extends TraceControls {
  traceRead?: Pick<TraceReadOptions, "format" | "blockTokens" | "onInvalid" | "onSkip">;
  maxInputTokens?: number;
  maxOutputTokens?: number;
}

function capTokens(tokens: number, cap: number | undefined): number {
  return Math.max(1, cap === undefined ? tokens : Math.min(tokens, cap));
}

/** The window's rows, in send order. */
async function traceRows(trace: string | readonly TraceRequest[], options: TraceItemsOptions, skipped: Skipped): Promise<TraceRequest[]> {
  const controls: TraceControls = {};
  if (options.fromMs !== undefined) controls.fromMs = options.fromMs;
  if (options.toMs !== undefined) controls.toMs = options.toMs;
  if (options.rebase !== undefined) controls.rebase = options.rebase;
  if (options.timeScale !== undefined) controls.timeScale = options.timeScale;
  const rows: TraceRequest[] = [];
  if (typeof trace === "string") {
    const onSkip = options.traceRead?.onSkip;
    const read = readTrace(trace, {
      ...options.traceRead,
      ...controls,
      onSkip: (error) => {
        skipped.invalid++;
        onSkip?.(error);
      },
    });
    for await (const row of read) rows.push(row);
  } else {
    const transform = createTraceTransform(controls);
    for (const row of trace) {
      const kept = transform(row);
      if (kept) rows.push(kept);
    }
  }
  const ordered = inSendOrder(rows);
  // Re-basing is on the first row of the file; in an unsorted trace an earlier row comes later and
  // would be due before the start (sent late, its lateness reported as the client's schedule lag).
  // The run starts with the earliest row instead, as the simulator's clock does.
  const first = ordered[0]?.timestampMs ?? 0;
  if ((options.rebase ?? true) && first < 0) return ordered.map((row) => ({ ...row, timestampMs: row.timestampMs - first }));
  return ordered;
}

/**
 * A trace's requests. The rows (not their prompts) are read whole before the first is sent, since
 * the last line of a file may be due first; prompts are synthesised one request at a time.
 */
export async function* traceItems(
  trace: string | readonly TraceRequest[],
  options: TraceItemsOptions,
  weights: RegionWeights,
  skipped: Skipped,
): AsyncGenerator<ReplayItem> {
  const rows = await traceRows(trace, options, skipped);
  // Over the window's rows, too-long ones included, as the simulator's buildSimRequests keys them.
  const roots = sessionRoots(rows);
  for (const [i, row] of rows.entries()) {
    if (options.maxInputTokens !== undefined && row.inputTokens > options.maxInputTokens) {
      skipped.tooLong++;
      continue;
    }
    const sessionId = row.sessionId ?? roots[i]!.id;
    yield {
      index: row.index,
      atMs: row.timestampMs,
      region: row.region ?? assignRegion(sessionId, weights),
      sessionId,
      // TurnChain decides from the format whether the row is a session's turn (multiTurnTrace rows).
      format: row.format,
      messages: traceMessages(row),
      maxTokens: capTokens(row.outputTokens, options.maxOutputTokens),
      inputTokens: row.inputTokens,
    };
  }
}

export function* generatorItems(generator: MultiTurnOptions, timeScale: number, maxOutputTokens: number | undefined): Generator<ReplayItem> {
  for (const request of createMultiTurnWorkload(generator)) {
    yield {
      index: request.index,
      atMs: request.atMs * timeScale,
      region: request.region,
      sessionId: request.sessionId,
      turn: request.turn,
      messages: request.messages,
      maxTokens: capTokens(request.maxTokens, maxOutputTokens),
      inputTokens: request.inputTokens,
    };
  }
}
