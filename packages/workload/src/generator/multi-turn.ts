// Built-in multi-turn chat workload for demos and tests, no trace file needed. Sessions share a
// system prompt; every turn re-sends the whole conversation (previous messages + the assistant's
// reply + a new user message), so contexts grow long and consecutive turns share ever longer
// prefixes, as in the Mooncake conversation trace. Deterministic for a seed.
//
// Each request also carries trace-style hash ids (prefix-chained over the serialised conversation,
// one id per block) so the simulator can run the same workload as the live replay.
import { z } from "zod";
import { createRng, hash53, randomExponential, randomInt, type Rng } from "../hash";
import { CHARS_PER_TOKEN, synthText, type ChatMessage } from "../prompt/synth";
import { assignRegion } from "../trace/controls";
import { sessionKeyOf } from "../trace/session-roots";
import type { BlockTokens, TraceRequest } from "../trace/types";

const Range = z.object({ min: z.number().int().positive(), max: z.number().int().positive() }).refine((r) => r.min <= r.max, "min must be ≤ max");

export const MultiTurnOptionsSchema = z.object({
  seed: z.number().int().default(1),
  /** Mean request rate over all sessions (Poisson arrivals), requests per second. */
  ratePerS: z.number().positive().default(2),
  /** Sessions active at once; a finished session is replaced by a new one. */
  sessions: z.number().int().positive().default(16),
  /** Turns per session, drawn uniformly. */
  turns: Range.default({ min: 4, max: 12 }),
  /** Region weights; a session's region comes from hashing its conversation root. */
  regions: z.record(z.string(), z.number().nonnegative()).default({ default: 1 }),
  /** Distinct system prompts shared across sessions (1: every session shares one). */
  systemPrompts: z.number().int().positive().default(1),
  /** Tokens per hash-id block (as in the trace formats). */
  blockTokens: z.union([z.literal(512), z.literal(256)]).default(256),
  /** Tokens of each new user message; the minimum is raised to one block (see below). */
  userTokens: Range.default({ min: 300, max: 1500 }),
  /** Tokens of each assistant reply; the request's max_tokens. */
  assistantTokens: Range.default({ min: 64, max: 256 }),
  /** Stop after this many requests. */
  maxRequests: z.number().int().nonnegative().optional(),
  /** Stop at the first request due at or after this time (ms from the start). */
  durationMs: z.number().nonnegative().optional(),
});
export type MultiTurnOptions = z.input<typeof MultiTurnOptionsSchema>;

export interface WorkloadRequest {
  /** 0-based position in the stream. */
  index: number;
  /** Send time, ms after the workload starts. */
  atMs: number;
  region: string;
  sessionId: string;
  /** 1-based turn within the session. */
  turn: number;
  /** The whole conversation so far, ending in the new user message. */
  messages: ChatMessage[];
  maxTokens: number;
  /** Estimated prompt tokens (serialised characters / 4). */
  inputTokens: number;
  /** Prefix-chained block ids over the serialised conversation. */
  hashIds: number[];
  blockTokens: BlockTokens;
}

// The serialisation the hash ids are computed over. Only prefix-preservation matters here (the
// live proxy cuts its own 64-character blocks); role and content are delimited unambiguously.
function serialise(message: ChatMessage): string {
  return `${message.role}\n${message.content}\n\n`;
}

interface Session {
  id: string;
  region: string | undefined;
  turnsLeft: number;
  turn: number;
  messages: ChatMessage[];
  /** The serialised conversation and the ids of its complete blocks, extended turn by turn. */
  text: string;
  fullBlockIds: number[];
  rng: Rng;
}

/**
 * An endless (or bounded by maxRequests / durationMs) deterministic stream of multi-turn requests.
 * Each arrival picks an active session at random and sends its next turn.
 */
export function* createMultiTurnWorkload(options: MultiTurnOptions = {}): Generator<WorkloadRequest> {
  const o = MultiTurnOptionsSchema.parse(options);
  const blockChars = o.blockTokens * CHARS_PER_TOKEN;
  // A first user message of at least one block makes block 1 complete from the first turn, so the
  // conversation root (blocks 0 and 1) and hence the region are the same for every turn.
  const userTokens = { min: Math.max(o.userTokens.min, o.blockTokens), max: Math.max(o.userTokens.max, o.blockTokens) };
  const arrivals = createRng(o.seed);
  const picker = createRng(o.seed ^ 0x5bd1e995);

  // Each system prompt fills block 0 exactly, so sessions sharing it share block 0 and nothing more.
  const systemPrompts = Array.from({ length: o.systemPrompts }, (_, k) => {
    const content = synthText(`system:${o.seed}:${k}`, blockChars - serialise({ role: "system", content: "" }).length);
    return { content, blockId: hash53(serialise({ role: "system", content })) };
  });

  let sessionsCreated = 0;
  const newSession = (): Session => {
    const n = sessionsCreated++;
    const rng = createRng((o.seed * 0x9e3779b1 + n * 0x85ebca6b) >>> 0);
    const system = systemPrompts[n % systemPrompts.length] as (typeof systemPrompts)[number];
    const message: ChatMessage = { role: "system", content: system.content };
    return {
      id: `s${o.seed}-${n}`,
      region: undefined,
      turnsLeft: randomInt(rng, o.turns.min, o.turns.max),
      turn: 0,
      messages: [message],
      text: serialise(message),
      fullBlockIds: [system.blockId],
      rng,
    };
  };
  const active: Session[] = Array.from({ length: o.sessions }, newSession);

  let atMs = 0;
  const meanGapMs = 1000 / o.ratePerS;
  for (let index = 0; o.maxRequests === undefined || index < o.maxRequests; index++) {
    atMs += randomExponential(arrivals, meanGapMs);
    if (o.durationMs !== undefined && atMs >= o.durationMs) return;
    const slot = Math.floor(picker.next() * active.length);
    const session = active[slot] as Session;

    session.turn++;
    const user: ChatMessage = {
      role: "user",
      content: synthText(`user:${session.id}:${session.turn}`, randomInt(session.rng, userTokens.min, userTokens.max) * CHARS_PER_TOKEN),
    };
    session.messages.push(user);
    session.text += serialise(user);

    // Extend the chain of complete blocks, then add one id for the partial tail, if any.
    const ids = session.fullBlockIds;
    for (let start = ids.length * blockChars; start + blockChars <= session.text.length; start += blockChars) {
      ids.push(hash53(session.text.slice(start, start + blockChars), ids[ids.length - 1] ?? 0));
    }
    const hashIds = ids.slice();
    const tail = session.text.slice(ids.length * blockChars);
    if (tail.length > 0) hashIds.push(hash53(tail, ids[ids.length - 1] ?? 0));

    // Block 0 is the system prompt and block 1 this session's first message (the generator builds
    // them so), so the first two ids name the session: sessionRoots() finds the same on its rows.
    session.region ??= assignRegion(sessionKeyOf(hashIds, 2), o.regions);
    const maxTokens = randomInt(session.rng, o.assistantTokens.min, o.assistantTokens.max);
    yield {
      index,
      atMs,
      region: session.region,
      sessionId: session.id,
      turn: session.turn,
      messages: session.messages.slice(),
      maxTokens,
      inputTokens: Math.ceil(session.text.length / CHARS_PER_TOKEN),
      hashIds,
      blockTokens: o.blockTokens,
    };

    // The reply the next turn will present. The live engine's real reply differs, but a fixed one
    // keeps the workload deterministic and the next turn's prefix identical in sim and replay.
    const assistant: ChatMessage = {
      role: "assistant",
      content: synthText(`assistant:${session.id}:${session.turn}`, maxTokens * CHARS_PER_TOKEN),
    };
    session.messages.push(assistant);
    session.text += serialise(assistant);
    if (--session.turnsLeft === 0) active[slot] = newSession();
  }
}

/** A generator request as a trace row, for the simulator. */
export function workloadRequestToTrace(request: WorkloadRequest): TraceRequest {
  return {
    index: request.index,
    timestampMs: request.atMs,
    sourceTimestampMs: request.atMs,
    inputTokens: request.inputTokens,
    outputTokens: request.maxTokens,
    hashIds: request.hashIds,
    blockTokens: request.blockTokens,
    format: "multi-turn",
    region: request.region,
    sessionId: request.sessionId,
  };
}

/** A bounded multi-turn workload as trace rows. Requires maxRequests or durationMs. */
export function multiTurnTrace(options: MultiTurnOptions): TraceRequest[] {
  if (options.maxRequests === undefined && options.durationMs === undefined) {
    throw new Error("multiTurnTrace needs a bound: set maxRequests or durationMs");
  }
  return Array.from(createMultiTurnWorkload(options), workloadRequestToTrace);
}
