// The normalised request row every trace format is read into. The simulator and the replay client
// consume only this shape, never the raw JSONL.

/** Formats read from files. */
export type TraceFileFormat = "mooncake" | "art-chat";
/** Where a row came from: a trace file, or the built-in multi-turn generator. */
export type TraceFormat = TraceFileFormat | "multi-turn";

/** Tokens one hash id stands for: Mooncake FAST'25 blocks are 512 tokens, ART-Chat blocks 256. */
export type BlockTokens = 512 | 256;

export const BLOCK_TOKENS: Readonly<Record<TraceFileFormat, BlockTokens>> = {
  mooncake: 512,
  "art-chat": 256,
};

/** A trace hash id: an integer (Mooncake) or a hex string (ART-Chat). */
export type HashId = number | string;

export interface TraceRequest {
  /** 0-based position among the valid rows of the source, before any window: a stable id. */
  index: number;
  /** Send time in ms after the transforms (window re-basing, time scale). */
  timestampMs: number;
  /** The row's own timestamp in the file, untouched. */
  sourceTimestampMs: number;
  inputTokens: number;
  outputTokens: number;
  /** Prefix-chained block ids: equal prefixes of ids mean equal prompt prefixes. */
  hashIds: HashId[];
  blockTokens: BlockTokens;
  format: TraceFormat;
  /** Generator rows only: the region and session the generator assigned. */
  region?: string;
  sessionId?: string;
  /** ART-Chat only: the recorded request body (an OpenAI chat request), when the trace carries one. */
  body?: Record<string, unknown>;
}
