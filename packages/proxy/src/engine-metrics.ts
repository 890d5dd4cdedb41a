// Reads the load an engine reports on /metrics, in SGLang or vLLM naming, into the ScrapedLoad the
// policies consume. The dialect is taken from the replica's config when given, else detected from
// the metric names, so a replica can be swapped for the other engine without a config change.
import type { EngineKind, ScrapedLoad } from "@meridian/routing";
import { firstOf, parsePrometheusText, sumOf, type ParsedMetrics } from "./prometheus-text";

/** The /metrics naming an engine uses: its kind (routing's ENGINE_KINDS). */
export type EngineDialect = EngineKind;

export interface EngineScrape {
  dialect: EngineDialect;
  load: ScrapedLoad;
}

export function detectDialect(parsed: ParsedMetrics): EngineDialect | null {
  for (const sample of parsed.samples) {
    if (sample.name.startsWith("sglang:")) return "sglang";
    if (sample.name.startsWith("vllm:")) return "vllm";
  }
  return null;
}

/** Throws when the text holds neither dialect's load gauges (wrong endpoint, not an engine). */
export function readEngineLoad(text: string, dialect?: EngineDialect): EngineScrape {
  const parsed = parsePrometheusText(text);
  const resolved = dialect ?? detectDialect(parsed);
  if (resolved === "sglang") {
    const running = sumOf(parsed, "sglang:num_running_reqs");
    const waiting = sumOf(parsed, "sglang:num_queue_reqs");
    if (running === undefined || waiting === undefined) {
      throw new Error("sglang metrics lack sglang:num_running_reqs or sglang:num_queue_reqs");
    }
    return { dialect: "sglang", load: { running, waiting, usedTokens: sumOf(parsed, "sglang:num_used_tokens") ?? 0 } };
  }
  if (resolved === "vllm") {
    const running = sumOf(parsed, "vllm:num_requests_running");
    const waiting = sumOf(parsed, "vllm:num_requests_waiting");
    if (running === undefined || waiting === undefined) {
      throw new Error("vllm metrics lack vllm:num_requests_running or vllm:num_requests_waiting");
    }
    return { dialect: "vllm", load: { running, waiting, usedTokens: vllmUsedTokens(parsed) } };
  }
  throw new Error("metrics are neither SGLang nor vLLM (no sglang:/vllm: samples)");
}

/** vLLM reports KV usage as a fraction; the token count is that fraction of gpu blocks × block size
 * from vllm:cache_config_info (V0: gpu_cache_usage_perc, V1: kv_cache_usage_perc). */
function vllmUsedTokens(parsed: ParsedMetrics): number {
  const usage = sumOf(parsed, "vllm:gpu_cache_usage_perc") ?? sumOf(parsed, "vllm:kv_cache_usage_perc");
  if (usage === undefined || !(usage > 0)) return 0;
  const info = firstOf(parsed, "vllm:cache_config_info");
  const blocks = Number(info?.labels["num_gpu_blocks"]);
  const blockSize = Number(info?.labels["block_size"]);
  if (Number.isFinite(blocks) && Number.isFinite(blockSize) && blocks > 0 && blockSize > 0) {
    return Math.round(usage * blocks * blockSize);
  }
  return 0;
}
