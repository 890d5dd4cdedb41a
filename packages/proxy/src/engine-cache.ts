// Reads what the LB's cache model needs from an engine's /metrics: the KV capacity its prefix cache
// lives in, and the start time and counters that identify the engine process (restart detection,
// @meridian/routing engine-restart.ts). Names, by engine version:
//
//   SGLang  `sglang:max_total_num_tokens` (gauge, KV pool size in tokens) is exported by current
//           releases (python/sglang/srt/metrics/collector.py @ 00ae9c15). Releases whose /metrics
//           match docs/references/production_metrics.md (our fixture) lack it; their capacity is
//           `num_used_tokens / token_usage`, readable whenever the engine holds any KV. Every TP rank
//           exports the same pool and each DP rank has its own: ranks are combined by taking the
//           largest value per dp_rank and summing over dp_ranks.
//   vLLM    `vllm:cache_config_info` (info gauge) carries num_gpu_blocks and block_size as labels in
//           every version since 0.4 (aibrix fixture: v0.7); with enable_prefix_caching="False" the
//           engine caches nothing and the capacity is 0. Usage is `vllm:kv_cache_usage_perc` from
//           0.9 (V1), `vllm:gpu_cache_usage_perc` before (deprecated in 0.9, hidden since 0.10);
//           either is accepted.
//   both    `<engine>:prompt_tokens_total` and `<engine>:generation_tokens_total` only grow within
//           one process; `process_start_time_seconds` when the exporter includes the process
//           collector (vLLM's default registry; SGLang's multiprocess registry does not).
import type { EngineCacheScrape, EngineKind } from "@meridian/routing";
import { firstOf, sumOf, type ParsedMetrics, type PromSample } from "./prometheus-text";

export interface EngineCacheInfo extends EngineCacheScrape {
  /** The KV pool in tokens; the cache capacity is this, or 0 when the engine caches no prefixes. */
  kvTokens: number | null;
  /** KV tokens in use by running requests, when the metrics say. */
  usedTokens: number | null;
  /** vLLM's KV block size (its cached counts are multiples of it); null for SGLang. */
  blockTokens: number | null;
}

function finite(value: number | undefined): number | null {
  return value !== undefined && Number.isFinite(value) ? value : null;
}

/** Largest value per dp_rank, summed over dp_ranks (TP ranks repeat their DP group's pool). */
function perDpRankTotal(samples: readonly PromSample[], name: string): number | null {
  const byRank = new Map<string, number>();
  for (const sample of samples) {
    if (sample.name !== name || !Number.isFinite(sample.value)) continue;
    const rank = sample.labels["dp_rank"] ?? "";
    byRank.set(rank, Math.max(byRank.get(rank) ?? -Infinity, sample.value));
  }
  if (byRank.size === 0) return null;
  let total = 0;
  for (const value of byRank.values()) total += value;
  return total;
}

function sglangCapacity(parsed: ParsedMetrics): number | null {
  const direct = perDpRankTotal(parsed.samples, "sglang:max_total_num_tokens");
  if (direct !== null && direct > 0) return direct;
  const used = perDpRankTotal(parsed.samples, "sglang:num_used_tokens");
  const usage = finite(firstOf(parsed, "sglang:token_usage")?.value);
  if (used !== null && usage !== null && usage > 0 && usage <= 1) return Math.round(used / usage);
  return null;
}

function vllmConfig(parsed: ParsedMetrics): { kvTokens: number | null; caching: boolean; blockTokens: number | null } {
  const info = firstOf(parsed, "vllm:cache_config_info");
  if (info === undefined) return { kvTokens: null, caching: true, blockTokens: null };
  const blocks = Number(info.labels["num_gpu_blocks"]);
  const blockTokens = Number(info.labels["block_size"]);
  const size = Number.isFinite(blockTokens) && blockTokens > 0 ? blockTokens : null;
  const kvTokens = Number.isFinite(blocks) && blocks > 0 && size !== null ? blocks * size : null;
  return { kvTokens, caching: info.labels["enable_prefix_caching"]?.toLowerCase() !== "false", blockTokens: size };
}

/** Capacity, usage and process identity from parsed /metrics of the given dialect. Never throws:
 * what the metrics do not say is null. */
export function readEngineCache(parsed: ParsedMetrics, dialect: EngineKind): EngineCacheInfo {
  const counters: Record<string, number> = {};
  for (const name of ["prompt_tokens_total", "generation_tokens_total"]) {
    const value = finite(sumOf(parsed, `${dialect}:${name}`));
    if (value !== null) counters[name] = value;
  }
  const startTimeSec = finite(firstOf(parsed, "process_start_time_seconds")?.value);
  const epoch = startTimeSec === null && Object.keys(counters).length === 0 ? null : { startTimeSec, counters };
  if (dialect === "sglang") {
    const used = perDpRankTotal(parsed.samples, "sglang:num_used_tokens");
    const kvTokens = sglangCapacity(parsed);
    return { capacityTokens: kvTokens, kvTokens, usedTokens: used, blockTokens: null, epoch };
  }
  const { kvTokens, caching, blockTokens } = vllmConfig(parsed);
  const usage = finite(sumOf(parsed, "vllm:kv_cache_usage_perc") ?? sumOf(parsed, "vllm:gpu_cache_usage_perc"));
  const usedTokens = usage !== null && kvTokens !== null ? Math.round(usage * kvTokens) : null;
  return { capacityTokens: caching ? kvTokens : 0, kvTokens, usedTokens, blockTokens, epoch };
}
