// Turns workload rows (trace or generator) into the simulator's request records: block keys, session
// key and client region are computed once here, so comparing six policies on one workload pays for
// them once.

import { sessionKeyFromBlocks, traceBlockKeys, type BlockKey } from "@meridian/routing";
import { assignRegion, inSendOrder, sessionRoots, TurnChain, type SessionRoot, type TraceRequest } from "@meridian/workload";
import type { FleetSpec } from "./spec";

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
  /**
   * Key every session on this many leading blocks. Default: derived from the workload by
   * sessionRoots() (@meridian/workload), as the live replay does: the first block after the deepest
   * prompt that many conversations share and part after (the first two on the Mooncake conversation
   * trace, whose block 0 every row holds).
   */
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
  /** The blocks the session keys cover, fewest and most over the rows (both 2 on the conversation trace). */
  sessionKeyBlocks: { min: number; max: number };
  /** The share of the requests in the largest session: near 1 means session-split figures mean little. */
  largestSessionShare: number;
}

/** The rows and key depth the last roots were found for, and those roots. */
let lastRoots: { rows: readonly TraceRequest[]; blocks: number | undefined; roots: SessionRoot[] } | null = null;

/**
 * sessionRoots of the rows, reused when the rows are the ones of the last call (the same hash-id
 * arrays and sessions, in the same order): the load search builds one window at a dozen time scales,
 * and the keys do not depend on time, while finding them on a long shared prompt costs most of a
 * second per 30,000 rows.
 */
function rootsOf(rows: readonly TraceRequest[], blocks: number | undefined): SessionRoot[] {
  const last = lastRoots;
  const same =
    last !== null &&
    last.blocks === blocks &&
    last.rows.length === rows.length &&
    rows.every((row, i) => row.hashIds === last.rows[i]!.hashIds && row.sessionId === last.rows[i]!.sessionId);
  if (same) return last.roots;
  const roots = sessionRoots(rows, blocks === undefined ? {} : { blocks });
  lastRoots = { rows, blocks, roots };
  return roots;
}

/** Requests sorted by arrival (stable), keyed by session and region-assigned with the fleet's client
 * weights by the same conversation root (sessionRoots), each generator turn chained to its session's
 * previous one (TurnChain, as the live replay). */
export function buildSimRequests(rows: readonly TraceRequest[], spec: FleetSpec, options: BuildWorkloadOptions = {}): BuiltWorkload {
  const regions = new Set(spec.regions);
  const requests: SimRequest[] = [];
  const turns = new TurnChain<number>();
  let droppedTooLong = 0;
  const ordered = inSendOrder(rows);
  const arrivals = options.spreadTicks ? spreadTicks(ordered.map((r) => r.timestampMs)) : ordered.map((r) => r.timestampMs);
  // Over every row given, too-long ones included, as the replay's traceItems keys them.
  const roots = rootsOf(ordered, options.sessionKeyBlocks);
  for (let i = 0; i < ordered.length; i++) {
    const row = ordered[i]!;
    if (spec.maxInputTokens !== null && row.inputTokens > spec.maxInputTokens) {
      droppedTooLong++;
      continue;
    }
    const keys = traceBlockKeys(row.hashIds);
    const root = roots[i]!;
    // Generator rows carry their own region; keep it only when this fleet has that region. Otherwise
    // the region is the conversation's, never the shared prompt's (which would put most rows in one).
    const clientRegion = row.region !== undefined && regions.has(row.region) ? row.region : assignRegion(root.id, spec.clientRegionWeights);
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
      // The chained block key of the root's last block names the same prefix as root.id.
      sessionKey: (root.blocks > 0 && sessionKeyFromBlocks(keys, root.blocks)) || `request-${row.index}`,
      clientRegion,
      ...(typeof afterId === "number" ? { afterId } : {}),
    });
  }
  return { requests, droppedTooLong, ...sessionSummary(requests, roots) };
}

function sessionSummary(
  requests: readonly SimRequest[],
  roots: readonly { blocks: number }[],
): Pick<BuiltWorkload, "sessionKeyBlocks" | "largestSessionShare"> {
  let min = Infinity;
  let max = 0;
  for (const root of roots) {
    min = Math.min(min, root.blocks);
    max = Math.max(max, root.blocks);
  }
  const sizes = new Map<string, number>();
  let largest = 0;
  for (const r of requests) {
    const n = (sizes.get(r.sessionKey) ?? 0) + 1;
    sizes.set(r.sessionKey, n);
    largest = Math.max(largest, n);
  }
  return { sessionKeyBlocks: { min: roots.length > 0 ? min : 0, max }, largestSessionShare: requests.length > 0 ? largest / requests.length : 0 };
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
