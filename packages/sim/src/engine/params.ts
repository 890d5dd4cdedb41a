// Engine parameters and presets. Plain objects on purpose: callers override with a spread
// (`{ ...PAPER_ENGINE_PARAMS, prefillTokensPerSec: 6000 }`) and the fleet simulator calibrates them.
// All times are milliseconds on the caller's clock.

export interface EngineParams {
  /** Most requests in the running batch (SGLang max_running_requests, vLLM max_num_seqs). */
  maxRunning: number;
  /** KV capacity in tokens. A request is admitted only if its prompt plus its output fits. */
  kvCapacityTokens: number;
  /** Prefill throughput in tokens per second. */
  prefillTokensPerSec: number;
  /** Most prefill tokens one engine step computes (chunked prefill). */
  prefillChunkTokens: number;
  /** Fixed cost of one engine step, in ms (the decode ITL of a batch of one with no KV in use). */
  itlBaseMs: number;
  /** Added step time per decoding sequence, in ms. */
  itlPerSeqMs: number;
  /** Added step time per 1000 tokens of KV in use, in ms (memory-bound decode). */
  itlPerKTokMs: number;
  /** Tokens one prefix-cache block (one BlockKey) stands for. */
  blockTokens: number;
  /** Prefix-cache capacity in blocks; least recently used blocks are evicted past it. */
  prefixCacheBlocks: number;
  /** Cap on generated tokens per request (the paper's SGLang max output 128). */
  maxOutputTokens: number;
  /** Emit a "tokens" event per decoded token. Needed for real-time pacing, costly in simulation. */
  emitTokenEvents: boolean;
}

/**
 * Stands in for the paper's SGLang replicas (2× L40S, Qwen3.5-35B-A3B FP8, max 64 running requests,
 * max output 128, Mooncake 512-token blocks). ITL ≈ 9–10 ms unloaded and ≈ 20 ms saturated, as in the
 * paper's Table 2. The prefill rate is a starting point for the fleet simulator's calibration (a
 * time-scale sweep must saturate between time_scale 1 and 3): the Mooncake conversation trace offers
 * ≈ 3 req/s of ≈ 14k-token prompts with ≈ 16% block reuse, i.e. ≈ 12k uncached tokens/s per replica
 * of three at time_scale 1 and ≈ 4k at 3. With 10k tokens/s and least-running routing over three
 * replicas, the whole trace saturates at time_scale 1 (TTFT p50 in minutes), is near the knee at 2
 * (p50 ≈ 3 s) and recovers at 3 (p50 ≈ 2 s, ITL p50 ≈ 15 ms). A 2048-token chunk keeps the decode
 * stall per prefill step near 0.2 s.
 */
export const PAPER_ENGINE_PARAMS: Readonly<EngineParams> = Object.freeze({
  maxRunning: 64,
  kvCapacityTokens: 1_000_000,
  prefillTokensPerSec: 10_000,
  prefillChunkTokens: 2_048,
  itlBaseMs: 7,
  itlPerSeqMs: 0.12,
  itlPerKTokMs: 0.01,
  blockTokens: 512,
  prefixCacheBlocks: 2_000,
  maxOutputTokens: 128,
  emitTokenEvents: false,
});

/**
 * Fast enough for a laptop demo behind the HTTP server: a 1k-token prompt prefills in 40 ms, so TTFT
 * stays in the tens to hundreds of ms, and tokens stream every ~10 ms. Blocks are the 64-character
 * (≈16-token) chat blocks of @meridian/routing.
 */
export const DEMO_ENGINE_PARAMS: Readonly<EngineParams> = Object.freeze({
  maxRunning: 64,
  kvCapacityTokens: 262_144,
  prefillTokensPerSec: 25_000,
  prefillChunkTokens: 2_048,
  itlBaseMs: 8,
  itlPerSeqMs: 0.15,
  itlPerKTokMs: 0.02,
  blockTokens: 16,
  prefixCacheBlocks: 16_384,
  maxOutputTokens: 256,
  emitTokenEvents: true,
});

/**
 * The same engine serving a workload whose block keys stand for `blockTokens` tokens each (a trace's
 * 512, the multi-turn generator's 256): its prefix cache keeps its size in TOKENS. Without this a
 * 256-token workload on a 512-token engine reported twice its cached tokens and cached half as much
 * as the engine's KV capacity says, so neither the engine's hit rate nor an index sized from that
 * capacity could be right.
 */
export function withBlockTokens(params: Readonly<EngineParams>, blockTokens: number): EngineParams {
  if (!Number.isInteger(blockTokens) || blockTokens < 1) throw new RangeError(`blockTokens must be a positive integer, got ${blockTokens}`);
  if (blockTokens === params.blockTokens) return { ...params };
  return { ...params, blockTokens, prefixCacheBlocks: Math.round((params.prefixCacheBlocks * params.blockTokens) / blockTokens) };
}

/** Throws on parameters the model cannot run with (zero rates, fractional slots, ...). */
export function validateEngineParams(params: EngineParams): void {
  const positiveIntegers = ["maxRunning", "kvCapacityTokens", "prefillChunkTokens", "blockTokens", "maxOutputTokens"] as const;
  for (const name of positiveIntegers) {
    const value = params[name];
    if (!Number.isInteger(value) || value < 1) throw new RangeError(`EngineParams.${name} must be a positive integer, got ${value}`);
  }
  if (!Number.isInteger(params.prefixCacheBlocks) || params.prefixCacheBlocks < 0) {
    throw new RangeError(`EngineParams.prefixCacheBlocks must be a non-negative integer, got ${params.prefixCacheBlocks}`);
  }
  if (!(params.prefillTokensPerSec > 0) || !Number.isFinite(params.prefillTokensPerSec)) {
    throw new RangeError(`EngineParams.prefillTokensPerSec must be positive, got ${params.prefillTokensPerSec}`);
  }
  const nonNegative = ["itlBaseMs", "itlPerSeqMs", "itlPerKTokMs"] as const;
  for (const name of nonNegative) {
    const value = params[name];
    if (!(value >= 0) || !Number.isFinite(value)) throw new RangeError(`EngineParams.${name} must be >= 0, got ${value}`);
  }
  // A step must take time, or a decode-only batch would never let the clock move.
  if (params.itlBaseMs + params.itlPerSeqMs <= 0) throw new RangeError("EngineParams: itlBaseMs + itlPerSeqMs must be > 0");
}
