// Prompt token estimates without a tokenizer: characters / chars-per-token, 4 until the replicas'
// reported usage.prompt_tokens calibrate it.

import { RoutingInputError, describe } from "./errors";

export interface TokenEstimatorOptions {
  /** Ratio used before any sample. Default 4. */
  initialCharsPerToken?: number;
  /** Weight of each new sample in the EWMA. Default 0.1. */
  alpha?: number;
  /** Ratios are clamped to this range; real tokenizers sit around 2–6 chars/token. */
  minCharsPerToken?: number;
  maxCharsPerToken?: number;
  /** Prompts shorter than this are ignored: the chat template's fixed tokens dominate them. */
  minSampleChars?: number;
}

/** The most characters one token may stand for by default (real tokenizers: about 2–6). A prompt of
 * N tokens, as the LB estimates it, holds at most N × this many characters. */
export const MAX_CHARS_PER_TOKEN = 10;

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
    // The first sample replaces the guess outright; later ones move it gradually.
    this.ratio = this.samples === 0 ? clamped : this.ratio + this.alpha * (clamped - this.ratio);
    this.samples++;
    return true;
  }
}
