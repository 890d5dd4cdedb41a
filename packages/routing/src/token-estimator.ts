// Prompt token estimates without a tokenizer: characters / chars-per-token, 4 until the replicas'
// reported usage.prompt_tokens calibrate it. Calibration is an EWMA from the very first sample, each
// sample weighted by its size: a single request whose count the LB got wrong (tool definitions it
// did not see, a template's fixed preamble on a short prompt) moves the ratio a little, never to its
// own value. When the first sample replaced the ratio outright, one agent request (1.01 chars/token)
// made the LB refuse every prompt above 32k tokens as context_length_exceeded.

import { RoutingInputError, describe } from "./errors";

export interface TokenEstimatorOptions {
  /** Ratio used before any sample. Default 4. */
  initialCharsPerToken?: number;
  /** Weight in the EWMA of a sample of FULL_WEIGHT_CHARS or more (shorter ones weigh less). Default 0.1. */
  alpha?: number;
  /** Ratios are clamped to this range. Default [1, MAX_CHARS_PER_TOKEN]: measured with o200k, cl100k and
   * Llama 3, English prose and code run 4.0, tool-schema JSON 4.8, digits 2.0, Chinese 0.9–1.3 and
   * Japanese 1.0–1.4 characters a token. A floor of 1.5 would hold a fleet serving CJK text at up to
   * 1.6× too few tokens; the floor of 1 is about the lowest real ratio. The EWMA, not the floor, keeps
   * one odd sample from moving the estimate far. */
  minCharsPerToken?: number;
  maxCharsPerToken?: number;
  /** Prompts shorter than this are ignored: the chat template's fixed tokens dominate them. */
  minSampleChars?: number;
}

/** The most characters one token may stand for by default (real tokenizers: about 1–5). A prompt of
 * N tokens, as the LB estimates it, holds at most N × this many characters. */
export const MAX_CHARS_PER_TOKEN = 10;

/** A sample of this many characters (about 1k tokens) or more weighs the full alpha; a shorter one
 * proportionally less. A chat template adds 20–60 tokens of its own (role headers, a default system
 * prompt) that no character count sees: ≤ 5 % of a 1k-token prompt, but a 200-character question
 * reads ~2.6 chars/token, and a stream of short chats would otherwise pull the ratio there and inflate
 * every long prompt's estimate 1.5×. */
const FULL_WEIGHT_CHARS = 4096;

export class TokenEstimator {
  private ratio: number;
  private samples = 0;
  private readonly alpha: number;
  private readonly minRatio: number;
  private readonly maxRatio: number;
  private readonly minSampleChars: number;

  constructor(options: TokenEstimatorOptions = {}) {
    this.alpha = options.alpha ?? 0.1;
    this.minRatio = options.minCharsPerToken ?? 1;
    this.maxRatio = options.maxCharsPerToken ?? MAX_CHARS_PER_TOKEN;
    this.minSampleChars = options.minSampleChars ?? 64;
    this.ratio = options.initialCharsPerToken ?? 4;
    if (!(this.alpha > 0 && this.alpha <= 1)) throw new RoutingInputError("alpha", `must be in (0, 1], got ${describe(this.alpha)}`);
    if (!(this.minRatio > 0 && this.minRatio <= this.maxRatio && Number.isFinite(this.maxRatio))) {
      throw new RoutingInputError("minCharsPerToken", `bounds must satisfy 0 < min <= max < Infinity, got [${this.minRatio}, ${this.maxRatio}]`);
    }
    if (!(this.ratio >= this.minRatio && this.ratio <= this.maxRatio)) {
      throw new RoutingInputError("initialCharsPerToken", `must lie in [${this.minRatio}, ${this.maxRatio}], got ${describe(this.ratio)}`);
    }
  }

  /** Current characters-per-token ratio. */
  get charsPerToken(): number {
    return this.ratio;
  }

  /** Samples accepted so far; 0 means still on the default ratio. */
  get sampleCount(): number {
    return this.samples;
  }

  get calibrated(): boolean {
    return this.samples > 0;
  }

  /** Estimated tokens for `chars` characters (rounded up; 0 for 0). */
  estimate(chars: number): number {
    if (typeof chars !== "number" || !Number.isFinite(chars) || chars < 0) {
      throw new RoutingInputError("chars", `must be a finite number >= 0, got ${describe(chars)}`);
    }
    return Math.ceil(chars / this.ratio);
  }

  /** Learns from a replica's usage.prompt_tokens. Returns false (and changes nothing) for a sample it
   * rejects: non-finite, non-positive, too short, or wildly outside the sane range (likely a
   * mismatched request/response pair). */
  observe(chars: number, promptTokens: number): boolean {
    if (typeof chars !== "number" || typeof promptTokens !== "number") return false;
    if (!Number.isFinite(chars) || !Number.isFinite(promptTokens) || chars < this.minSampleChars || promptTokens <= 0) return false;
    const sample = chars / promptTokens;
    if (sample < this.minRatio / 2 || sample > this.maxRatio * 2) return false;
    const clamped = Math.min(this.maxRatio, Math.max(this.minRatio, sample));
    // The prior counts as history: the first sample moves it by at most alpha, as every later one.
    const weight = this.alpha * Math.min(1, chars / FULL_WEIGHT_CHARS);
    this.ratio += weight * (clamped - this.ratio);
    this.samples++;
    return true;
  }
}
