// Turns workload rows (trace or generator) into the simulator's request records: block keys, session
// key and client region are computed once here, so comparing six policies on one workload pays for
// them once.

import { sessionKeyFromBlocks, traceBlockKeys, type BlockKey } from "@meridian/routing";
import { assignRegion, inSendOrder, TurnChain, type TraceRequest } from "@meridian/workload";
import type { FleetSpec } from "./spec";

/** Trace runs key sessions on the first TWO blocks: block 0 of the Mooncake conversation trace is a
 * system prompt every request shares, so a one-block key would send everything to one replica. */
export const TRACE_SESSION_KEY_BLOCKS = 2;

export interface SimRequest {
  /** Position in this workload (0-based), the id in per-request output. */
  id: number;
  /** Row index in the source trace (before any window), for joining back to the trace. */
  traceIndex: number;
  /** When the client sends it, ms on the virtual clock. */
  arrivalMs: number;
  inputTokens: number;
  /** Tokens the engine will generate: the trace's output_length capped by the fleet's max output. */
  outputTokens: number;
  keys: BlockKey[];
  tokensPerBlock: number;
  sessionKey: string;
  clientRegion: string;
  /**
   * Generator turns after a session's first: the id of the session's previous turn. Its client sends
   * this one only once that reply has reached it (a chat user cannot send turn n+1 earlier), at
   * arrivalMs or later; trace rows have none and are sent at arrivalMs (open loop).
   */
  afterId?: number;
}

export interface BuildWorkloadOptions {
  sessionKeyBlocks?: number;
  /**
   * The Mooncake conversation trace stamps requests on a 3-second grid (~10 requests share each
   * timestamp), so time_scale stretches the gaps between ticks but never separates a tick's burst.
   * With `spreadTicks`, the requests sharing a timestamp are spaced evenly (in file order) over the
   * gap to the next distinct timestamp. Off by default: the raw trace is the reference.
   */
  spreadTicks?: boolean;
}

export interface BuiltWorkload {
  requests: SimRequest[];
  /** Rows dropped because their prompt exceeded the fleet's maxInputTokens. */
  droppedTooLong: number;
  sessionKeyBlocks: number;
}

/** Requests sorted by arrival (stable), region-assigned by conversation root with the fleet's client
 * weights, each generator turn chained to its session's previous one (TurnChain, as the live replay). */
export function buildSimRequests(rows: readonly TraceRequest[], spec: FleetSpec, options: BuildWorkloadOptions = {}): BuiltWorkload {
  const sessionKeyBlocks = options.sessionKeyBlocks ?? TRACE_SESSION_KEY_BLOCKS;
  const regions = new Set(spec.regions);
  const requests: SimRequest[] = [];
  const turns = new TurnChain<number>();
  let droppedTooLong = 0;
  const ordered = inSendOrder(rows);
  const arrivals = options.spreadTicks ? spreadTicks(ordered.map((r) => r.timestampMs)) : ordered.map((r) => r.timestampMs);
  for (let i = 0; i < ordered.length; i++) {
    const row = ordered[i]!;
    if (spec.maxInputTokens !== null && row.inputTokens > spec.maxInputTokens) {
      droppedTooLong++;
      continue;
    }
    const keys = traceBlockKeys(row.hashIds);
    // Generator rows carry their own region; keep it only when this fleet has that region.
    const clientRegion = row.region !== undefined && regions.has(row.region) ? row.region : assignRegion(row.hashIds, spec.clientRegionWeights);
    const id = requests.length;
    // Rows of a session are in turn order here (sorted by time, then index); a dropped turn is
    // never sent, so the next one waits for the turn before it.
    const afterId = turns.previous(row);
    turns.sent(row, id);
    requests.push({
      id,
      traceIndex: row.index,
      arrivalMs: arrivals[i]!,
      inputTokens: Math.max(1, row.inputTokens),
      outputTokens: Math.max(1, Math.min(row.outputTokens, spec.maxOutputTokens)),
      keys,
      tokensPerBlock: row.blockTokens,
      sessionKey: sessionKeyFromBlocks(keys, sessionKeyBlocks) || `request-${row.index}`,
      clientRegion,
      ...(typeof afterId === "number" ? { afterId } : {}),
    });
  }
  return { requests, droppedTooLong, sessionKeyBlocks };
}

/** Spaces runs of equal (sorted) times evenly up to the next distinct time; the last run keeps the
 * previous gap (or stays put when there is none). */
export function spreadTicks(sortedTimes: readonly number[]): number[] {
  const out = [...sortedTimes];
  let lastGap = 0;
  for (let start = 0; start < out.length; ) {
    let end = start + 1;
    while (end < out.length && sortedTimes[end] === sortedTimes[start]) end++;
    const t = sortedTimes[start]!;
    const gap = end < out.length ? sortedTimes[end]! - t : lastGap;
    const n = end - start;
    for (let k = 0; k < n; k++) out[start + k] = t + (gap * k) / n;
    if (end < out.length) lastGap = gap;
    start = end;
  }
  return out;
}
