// Reads the load an engine reports on /metrics, in SGLang or vLLM naming, into the ScrapedLoad the
// policies consume, and what the LB's cache model reads (engine-cache.ts). The dialect is taken from
// the replica's config when given, else detected from the metric names, so a replica can be swapped
// for the other engine without a config change.
import type { EngineKind, ScrapedLoad } from "@meridian/routing";
import { perDpRankTotal, readEngineCache, type EngineCacheInfo } from "./engine-cache";
import { parsePrometheusText, sumOf, type ParsedMetrics } from "./prometheus-text";

/** The /metrics naming an engine uses: its kind (routing's ENGINE_KINDS). */
export type EngineDialect = EngineKind;

export interface EngineScrape {
  dialect: EngineDialect;
  load: ScrapedLoad;
  cache: EngineCacheInfo;
}

export function detectDialect(parsed: ParsedMetrics): EngineDialect | null {
  for (const sample of parsed.samples) {
    if (sample.name.startsWith("sglang:")) return "sglang";
    if (sample.name.startsWith("vllm:")) return "vllm";
  }
  return null;
}

/** Throws when the text holds neither dialect's load gauges (wrong endpoint, not an engine), or only
 * non-finite values of them (sumOf skips ±Inf and NaN: an exporter's `+Inf` reads as no value). */
export function readEngineLoad(text: string, dialect?: EngineDialect): EngineScrape {
  const parsed = parsePrometheusText(text);
  const resolved = dialect ?? detectDialect(parsed);
  if (resolved === "sglang") {
    // Per DP group, as the KV figures: every TP rank of a group may export the group's gauges.
    const running = perDpRankTotal(parsed.samples, "sglang:num_running_reqs") ?? undefined;
    const waiting = perDpRankTotal(parsed.samples, "sglang:num_queue_reqs") ?? undefined;
    if (running === undefined || waiting === undefined) {
      throw new Error("sglang metrics lack a finite sglang:num_running_reqs or sglang:num_queue_reqs");
    }
    const cache = readEngineCache(parsed, "sglang");
    return { dialect: "sglang", load: { running, waiting, usedTokens: cache.usedTokens ?? 0 }, cache };
  }
  if (resolved === "vllm") {
    const running = sumOf(parsed, "vllm:num_requests_running");
    const waiting = sumOf(parsed, "vllm:num_requests_waiting");
    if (running === undefined || waiting === undefined) {
      throw new Error("vllm metrics lack a finite vllm:num_requests_running or vllm:num_requests_waiting");
    }
    const cache = readEngineCache(parsed, "vllm");
    return { dialect: "vllm", load: { running, waiting, usedTokens: cache.usedTokens ?? 0 }, cache };
  }
  throw new Error("metrics are neither SGLang nor vLLM (no sglang:/vllm: samples)");
}
