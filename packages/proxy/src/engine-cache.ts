// Reads what the LB's cache model needs from an engine's /metrics: the KV capacity its prefix cache
// lives in, and the start time and counters that identify the engine process (restart detection,
// @meridian/routing engine-restart.ts). Names, by engine version:
//
//   SGLang  `sglang:max_total_num_tokens` (gauge, KV pool size in tokens) is exported by current
//           releases (python/sglang/srt/metrics/collector.py @ 00ae9c15). Releases whose /metrics
//           match docs/references/production_metrics.md (our fixture) lack it; their capacity is
//           estimated as `num_used_tokens / token_usage` per DP rank, summed over DP ranks (each DP
//           rank has its own pool and its own usage). SGLang rounds token_usage to 2 decimals
//           (`round(token_usage, 2)`), an error of up to 0.005, i.e. 0.005 / usage of the estimate:
//           it is only taken when every rank's usage is at least MIN_ESTIMATE_USAGE (error <= 5 %),
//           and marked `capacityEstimated` (CacheTruth keeps the largest estimate until the engine
//           restarts, so a low reading never shrinks the replica's budget). Every TP rank exports the
//           same values as its DP group: ranks are combined by taking the largest value per dp_rank.
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

/** Largest error of SGLang's token_usage (rounded to 2 decimals), and the largest relative error
 * accepted in a capacity estimated from it: 0.005 / usage <= 5 % needs a usage of at least 0.1. */
const SGLANG_USAGE_ROUNDING = 0.005;
const MAX_ESTIMATE_ERROR = 0.05;
const MIN_ESTIMATE_USAGE = SGLANG_USAGE_ROUNDING / MAX_ESTIMATE_ERROR;

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

/** Largest value per dp_rank (TP ranks repeat their DP group's values). */
function perDpRank(samples: readonly PromSample[], name: string): Map<string, number> {
  const byRank = new Map<string, number>();
  for (const sample of samples) {
    if (sample.name !== name || !Number.isFinite(sample.value)) continue;
    const rank = sample.labels["dp_rank"] ?? "";
    byRank.set(rank, Math.max(byRank.get(rank) ?? -Infinity, sample.value));
  }
  return byRank;
}

/** Largest value per dp_rank, summed over dp_ranks: an SGLang gauge of a DP group counted once,
 * however many of its TP ranks export it (`--enable-metrics-for-all-schedulers`). */
export function perDpRankTotal(samples: readonly PromSample[], name: string): number | null {
  const byRank = perDpRank(samples, name);
  if (byRank.size === 0) return null;
  let total = 0;
  for (const value of byRank.values()) total += value;
  return total;
}

/** The KV pool the engine states, else the estimate from num_used_tokens / token_usage per DP rank
 * (null unless every rank's usage is high enough for the 2-decimal rounding to matter little). */
function sglangCapacity(parsed: ParsedMetrics): { tokens: number | null; estimated: boolean } {
  const direct = perDpRankTotal(parsed.samples, "sglang:max_total_num_tokens");
  if (direct !== null && direct > 0) return { tokens: direct, estimated: false };
  const used = perDpRank(parsed.samples, "sglang:num_used_tokens");
  const usage = perDpRank(parsed.samples, "sglang:token_usage");
  if (usage.size === 0) return { tokens: null, estimated: false };
  let total = 0;
  for (const [rank, fraction] of usage) {
    const tokens = used.get(rank);
    if (tokens === undefined || !(fraction >= MIN_ESTIMATE_USAGE && fraction <= 1)) return { tokens: null, estimated: true };
    total += tokens / fraction;
  }
  return { tokens: Math.round(total), estimated: true };
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

/**
 * The cumulative token counters that identify an engine process, one entry per series (name and
 * labels): a counter that goes back is a restart (routing's engineRestarted). Per series, not summed:
 * a series missing from one scrape (a DP rank that answered late) lowered the sum, which read as a
 * restart and cleared the replica's routes.
 */
function processCounters(parsed: ParsedMetrics, dialect: EngineKind): Record<string, number> {
  const counters: Record<string, number> = {};
  for (const name of ["prompt_tokens_total", "generation_tokens_total"]) {
    for (const sample of parsed.samples) {
      if (sample.name !== `${dialect}:${name}` || !Number.isFinite(sample.value)) continue;
      const labels = Object.keys(sample.labels)
        .sort()
        .map((key) => `${key}=${JSON.stringify(sample.labels[key])}`)
        .join(",");
      counters[`${name}{${labels}}`] = sample.value;
    }
  }
  return counters;
}

/** Capacity, usage and process identity from parsed /metrics of the given dialect. Never throws:
 * what the metrics do not say is null. */
export function readEngineCache(parsed: ParsedMetrics, dialect: EngineKind): EngineCacheInfo {
  const counters = processCounters(parsed, dialect);
  const startTimeSec = finite(firstOf(parsed, "process_start_time_seconds")?.value);
  const epoch = startTimeSec === null && Object.keys(counters).length === 0 ? null : { startTimeSec, counters };
  if (dialect === "sglang") {
    const used = perDpRankTotal(parsed.samples, "sglang:num_used_tokens");
    const { tokens: kvTokens, estimated } = sglangCapacity(parsed);
    return { capacityTokens: kvTokens, kvTokens, usedTokens: used, blockTokens: null, epoch, ...(estimated ? { capacityEstimated: true } : {}) };
  }
  const { kvTokens, caching, blockTokens } = vllmConfig(parsed);
  const usage = finite(sumOf(parsed, "vllm:kv_cache_usage_perc") ?? sumOf(parsed, "vllm:gpu_cache_usage_perc"));
  const usedTokens = usage !== null && kvTokens !== null ? Math.round(usage * kvTokens) : null;
  return { capacityTokens: caching ? kvTokens : 0, kvTokens, usedTokens, blockTokens, epoch };
}
