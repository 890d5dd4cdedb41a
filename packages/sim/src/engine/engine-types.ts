// What the engine model takes and emits (engine-model.ts is the model itself).
import type { BlockKey } from "@meridian/routing";

export interface EngineRequest {
  /** Unique among the requests the engine holds. */
  id: string;
  /** Chained prefix block keys of the prompt, each covering `params.blockTokens` tokens. */
  blockKeys: readonly BlockKey[];
  inputTokens: number;
  /** The number of tokens to generate (clamped to [1, params.maxOutputTokens]). */
  maxOutputTokens: number;
  /** Block keys of prompt + reply as the next turn will present them; cached at completion. */
  completionBlockKeys?: readonly BlockKey[];
}

export interface FirstTokenEvent {
  type: "first-token";
  id: string;
  time: number;
  cachedTokens: number;
  promptTokens: number;
}

/** One event per decoded token after the first; only with `params.emitTokenEvents`. */
export interface TokensEvent {
  type: "tokens";
  id: string;
  time: number;
  count: number;
}

export interface DoneEvent {
  type: "done";
  id: string;
  time: number;
  outputTokens: number;
  cachedTokens: number;
  promptTokens: number;
  submitTime: number;
  firstTokenTime: number;
  /** Mean inter-token latency of this request: (done − first token) / (outputTokens − 1); 0 for one token. */
  meanItlMs: number;
}

export type EngineEvent = FirstTokenEvent | TokensEvent | DoneEvent;

export interface EngineLoad {
  /** Admitted requests: prefilling or decoding (SGLang num_running_reqs). */
  running: number;
  /** Requests waiting for a slot or for KV (SGLang num_queue_reqs). */
  waiting: number;
  /** KV tokens held by admitted requests (SGLang num_used_tokens). */
  usedTokens: number;
  kvCapacityTokens: number;
  /** usedTokens / kvCapacityTokens. */
  tokenUsage: number;
  /** Cached / prompt tokens over all admitted requests since construction. */
  cacheHitRate: number;
  /** The concurrency the engine admits (maxRunning). */
  admittedConcurrency: number;
  prefilling: number;
  decoding: number;
  cachedBlocks: number;
  prefixCacheBlocks: number;
  promptTokensTotal: number;
  cachedTokensTotal: number;
  /** Tokens generated so far, including those of requests still decoding. */
  generationTokensTotal: number;
  requestsFinished: number;
  requestsCancelled: number;
  /** Always 0: this model waits instead of preempting. */
  preemptionsTotal: number;
}

/** Called for runs of identical steps: `steps` steps of `tokensPerStep` tokens each (prefill + decode). */
export type StepListener = (tokensPerStep: number, steps: number) => void;
