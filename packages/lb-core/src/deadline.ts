// The first-byte deadline: how long a request may wait on a replica for its first response byte
// before the LB gives up on that replica and places it elsewhere (while no byte has reached the
// client, moving it is invisible to the client). One fixed timeout cannot serve both a 50-token chat
// turn, whose first token is due in tens of ms, and an 80k-token prompt behind a busy batch, which
// may take many seconds: a fixed 120 s left requests on a frozen replica for two minutes. So the
// deadline is derived from the request's expected time to first byte on that replica:
//
//   expected = RTT + overhead + tokensAhead × prefill ms/token  (+ max_tokens × decode ms/token when
//              the response is not streamed: its first byte comes with its last)
//   deadline = clamp(limits.firstByteMinMs, limits.headersTimeoutMs, FIRST_BYTE_SLACK × expected)
//
// tokensAhead is what the engine has to prefill before this request's first token, as the LB sees it
// at dispatch: the prompt tokens in flight on the replica (this LB's and those peers report,
// including this request) less the tokens the index predicts cached for this one. It over-counts
// requests already decoding, which only makes the deadline more generous, and the rates are learned
// from the same quantity, so the bias cancels. Per replica, from its own answers:
//   - overhead: time to first byte beyond the RTT of requests with few tokens ahead (scheduling,
//     one decode step);
//   - prefill ms/token: the rest of it per token ahead, from requests with many tokens ahead;
//   - decode ms/token: time from first to last byte of a stream per output token of one sequence
//     (a stream of n choices decodes them side by side: DecodeSample).
// Before a replica has answered, conservative priors stand in (1,000 prefill tokens/s, 20 output
// tokens/s: slower than any GPU engine), so a new replica gets a generous deadline, not a tight one.
// A non-streamed request without max_tokens has no expected length: its deadline is the cap.
import type { LbConfig } from "@meridian/protocol";

/** The deadline is this many times the expected time: a request is moved only when its replica is
 * clearly stuck, not merely slower than usual. */
export const FIRST_BYTE_SLACK = 4;
/** ms per prefill token before a replica has history (1,000 tokens/s). */
export const PRIOR_PREFILL_MS_PER_TOKEN = 1;
/** ms per output token before a replica has history (20 tokens/s). */
export const PRIOR_DECODE_MS_PER_TOKEN = 50;
/** A first byte with at least this many tokens ahead teaches the prefill rate; one with fewer, the
 * fixed overhead (below it the overhead dominates the per-token part). */
export const RATE_SAMPLE_MIN_TOKENS = 1_024;
/** Weight of the newest sample in each of the three averages. */
const HISTORY_ALPHA = 0.2;

function ewma(previous: number | null, sample: number): number {
  return previous === null ? sample : HISTORY_ALPHA * sample + (1 - HISTORY_ALPHA) * previous;
}

/** What one replica's (or peer LB's) answers taught about its time to first byte. */
export class FirstByteHistory {
  overheadMs: number | null = null;
  prefillMsPerToken: number | null = null;
  decodeMsPerToken: number | null = null;

  /** A first byte came `elapsedMs` after dispatch, with `tokensAhead` to prefill and `rttMs` of RTT. */
  observeFirstByte(tokensAhead: number, elapsedMs: number, rttMs: number): void {
    if (!Number.isFinite(elapsedMs) || elapsedMs < 0 || !Number.isFinite(tokensAhead)) return;
    const work = Math.max(0, elapsedMs - rttMs);
    if (tokensAhead < RATE_SAMPLE_MIN_TOKENS) this.overheadMs = ewma(this.overheadMs, work);
    else this.prefillMsPerToken = ewma(this.prefillMsPerToken, Math.max(0, work - (this.overheadMs ?? 0)) / tokensAhead);
  }

  /** A stream's output (`sample`) took `decodeMs` from its first byte to its last. */
  observeDecode(sample: DecodeSample, decodeMs: number): void {
    const perSequence = tokensPerSequence(sample);
    if (!(perSequence >= 1) || !Number.isFinite(decodeMs) || decodeMs < 0) return;
    this.decodeMsPerToken = ewma(this.decodeMsPerToken, decodeMs / perSequence);
  }
}

/** What a finished stream generated: `outputTokens` over `sequences` sequences. A request with n
 * choices (or a /v1/completions batch of prompts) reports the SUM of its sequences' tokens
 * (usage.completion_tokens, OpenAI and vLLM alike), but the engine decodes them side by side, one
 * token of each per step: the time per token of a reply is the stream's time over ONE sequence's
 * tokens. Divided by the sum, an n=8 stream taught an eighth of the true rate, and every later
 * non-streamed deadline (max_tokens × decode ms/token) fired while the engine was still decoding. */
export interface DecodeSample {
  outputTokens: number;
  /** How many sequences `outputTokens` counts (1 when it counts one choice's tokens). */
  sequences: number;
}

/** The mean tokens of one sequence. The stream lasted as long as its longest sequence, which has at
 * least the mean: the rate learned from the mean errs slow, so deadlines err generous. */
function tokensPerSequence(sample: DecodeSample): number {
  const sequences = Number.isFinite(sample.sequences) && sample.sequences >= 1 ? Math.floor(sample.sequences) : 1;
  return sample.outputTokens / sequences;
}

export interface FirstByteInput {
  /** The replica's RTT estimate (0 when unknown). */
  rttMs: number;
  tokensAhead: number;
  /** Streamed responses send their first byte with the first token; others with the last. */
  stream: boolean;
  /** The request's max_tokens (or max_completion_tokens); null when absent. */
  maxOutputTokens: number | null;
  history: Pick<FirstByteHistory, "overheadMs" | "prefillMsPerToken" | "decodeMsPerToken">;
  /** limits.firstByteMinMs */
  floorMs: number;
  /** limits.headersTimeoutMs */
  capMs: number;
}

/** The deadline of one dispatch, and what it was derived from (handed back when the byte arrives). */
export interface FirstBytePlan {
  deadlineMs: number;
  /** null when nothing bounds the expectation (the deadline is then the cap). */
  expectedMs: number | null;
  tokensAhead: number;
}

export function firstByteDeadline(input: FirstByteInput): FirstBytePlan {
  const { history } = input;
  const tokensAhead = Math.max(0, input.tokensAhead);
  let expectedMs = Math.max(0, input.rttMs) + (history.overheadMs ?? 0) + tokensAhead * (history.prefillMsPerToken ?? PRIOR_PREFILL_MS_PER_TOKEN);
  if (!input.stream) {
    if (input.maxOutputTokens === null) return { deadlineMs: input.capMs, expectedMs: null, tokensAhead };
    expectedMs += input.maxOutputTokens * (history.decodeMsPerToken ?? PRIOR_DECODE_MS_PER_TOKEN);
  }
  const deadlineMs = Math.min(input.capMs, Math.max(input.floorMs, FIRST_BYTE_SLACK * expectedMs));
  return { deadlineMs, expectedMs, tokensAhead };
}

/** What a dispatch's first byte waits on: the replica or peer LB record it was booked on. */
export interface FirstByteSource {
  rtt: { ms: number | null };
  firstByte: FirstByteHistory;
}

/**
 * The first-byte deadline of a request just placed on `target`, booked on `source`.
 * - On a replica, tokensAhead is the prompt tokens in flight there: this LB's (this request's
 *   included) and those peers report, less what the index predicts the replica holds of this prompt.
 * - On a peer LB, it is this request's whole prompt: the peer's replicas, their queues and their
 *   caches are the peer's to know, and a forward goes only where the peer reported a free replica.
 *   The peer's history is learned from its answers to this LB's forwards, its own replica's time
 *   included, per token the peer did not hold: each answer's usage says how many it held
 *   (completion.ts), so its cache hits, fast, do not make it look faster for a prompt it does not
 *   hold. Without that report (an engine that does not count cached tokens) nothing is learned and
 *   the prior stands, slower than any GPU engine. The peer runs its own deadline on that replica;
 *   this one lets the request come home when the peer holds it long past what its forwards take,
 *   and only to a target that can take it now (redispatch.ts).
 * With no record (a target a config removed), the deadline is the cap.
 */
export function ticketFirstBytePlan(
  target: { kind: "replica" | "peer"; predictedCachedTokens: number } | null,
  source: (FirstByteSource & { queuedTokens?: number; peerQueuedTokens?: number }) | undefined,
  promptTokens: number,
  limits: Pick<LbConfig["limits"], "headersTimeoutMs" | "firstByteMinMs">,
  response: { stream: boolean; maxOutputTokens: number | null },
): FirstBytePlan {
  if (!target || !source) return { deadlineMs: limits.headersTimeoutMs, expectedMs: null, tokensAhead: 0 };
  const tokensAhead = target.kind === "peer" ? promptTokens : (source.queuedTokens ?? 0) + (source.peerQueuedTokens ?? 0) - target.predictedCachedTokens;
  return firstByteDeadline({
    rttMs: source.rtt.ms ?? 0,
    tokensAhead,
    stream: response.stream,
    maxOutputTokens: response.maxOutputTokens,
    history: source.firstByte,
    floorMs: limits.firstByteMinMs,
    capMs: limits.headersTimeoutMs,
  });
}
