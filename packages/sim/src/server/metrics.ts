// /metrics of the simulated engine, under SGLang's or vLLM's metric names, types and labels (as in
// shared/fixtures/sglang-metrics-docs-example.txt and vllm-metrics-v0.7-aibrix-docs.txt), so the load
// balancers scrape it exactly as they would scrape a real engine.
import type { EngineModel } from "../engine";
import { Exposition, Histogram } from "./prometheus";

export type Dialect = "sglang" | "vllm";
export const DIALECTS = ["sglang", "vllm"] as const satisfies readonly Dialect[];

export type FinishReason = "stop" | "length";

// Bucket bounds as the engines define them (SGLang metrics collector; vLLM v0 metrics.py).
const SGLANG_TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 15, 20, 25, 30];
const SGLANG_E2E_BUCKETS = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60];
const SGLANG_TPOT_BUCKETS = [0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5];
/** SGLang's func_latency buckets: 0.05 · 1.5^k, k = 0..17, built by repeated multiplication as Python does. */
const SGLANG_FUNC_LATENCY_BUCKETS: number[] = [0.05];
for (let k = 1; k < 18; k++) SGLANG_FUNC_LATENCY_BUCKETS.push(SGLANG_FUNC_LATENCY_BUCKETS[k - 1]! * 1.5);
const VLLM_TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const VLLM_E2E_BUCKETS = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60];
const VLLM_TPOT_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5];
/** vLLM's iteration-token buckets are its CUDA-graph batch sizes: 1, 2, 4, then multiples of 8. */
const VLLM_ITERATION_BUCKETS = [1, 2, 4, ...Array.from({ length: 64 }, (_, i) => 8 * (i + 1))];

/** Throughput is measured over at least this window, so back-to-back scrapes do not read noise. */
const THROUGHPUT_WINDOW_MS = 1_000;

export interface CompletedRequest {
  ttftSec: number;
  e2eSec: number;
  outputTokens: number;
  meanItlSec: number;
  finishReason: FinishReason;
}

export class EngineMetrics {
  private readonly ttft: Histogram;
  private readonly e2e: Histogram;
  private readonly tpot: Histogram;
  private readonly funcLatency = new Histogram(SGLANG_FUNC_LATENCY_BUCKETS);
  private readonly iterationTokens = new Histogram(VLLM_ITERATION_BUCKETS);
  private readonly finished: Record<FinishReason, number> = { stop: 0, length: 0 };
  private throughputSample = { timeMs: 0, generated: 0 };
  private throughput = 0;
  private readonly startedAtSec = Date.now() / 1000;

  constructor(
    private readonly engine: EngineModel,
    private readonly dialect: Dialect,
    private readonly model: string,
  ) {
    this.ttft = new Histogram(dialect === "sglang" ? SGLANG_TTFT_BUCKETS : VLLM_TTFT_BUCKETS);
    this.e2e = new Histogram(dialect === "sglang" ? SGLANG_E2E_BUCKETS : VLLM_E2E_BUCKETS);
    this.tpot = new Histogram(dialect === "sglang" ? SGLANG_TPOT_BUCKETS : VLLM_TPOT_BUCKETS);
    if (dialect === "vllm") engine.onSteps((tokens, steps) => this.iterationTokens.observe(tokens, steps));
  }

  observeCompleted(request: CompletedRequest): void {
    this.ttft.observe(request.ttftSec);
    this.e2e.observe(request.e2eSec);
    // Both engines observe one TPOT sample per generated token after the first.
    if (request.outputTokens > 1) this.tpot.observe(request.meanItlSec, request.outputTokens - 1);
    this.finished[request.finishReason]++;
  }

  /** Wall time the server spent on one generate request (SGLang's func_latency_seconds{name="generate_request"}). */
  observeHandlerLatency(seconds: number): void {
    this.funcLatency.observe(seconds);
  }

  render(nowMs: number): string {
    const load = this.engine.load();
    const elapsed = nowMs - this.throughputSample.timeMs;
    if (elapsed >= THROUGHPUT_WINDOW_MS) {
      this.throughput = ((load.generationTokensTotal - this.throughputSample.generated) * 1000) / elapsed;
      this.throughputSample = { timeMs: nowMs, generated: load.generationTokensTotal };
    }
    const labels = { model_name: this.model };
    const out = new Exposition();
    if (this.dialect === "sglang") {
      out
        .family("sglang:prompt_tokens_total", "counter", "Number of prefill tokens processed.")
        .sample("sglang:prompt_tokens_total", labels, load.promptTokensTotal)
        .family("sglang:generation_tokens_total", "counter", "Number of generation tokens processed.")
        .sample("sglang:generation_tokens_total", labels, load.generationTokensTotal)
        .family("sglang:token_usage", "gauge", "The token usage")
        .sample("sglang:token_usage", labels, load.tokenUsage)
        .family("sglang:cache_hit_rate", "gauge", "The cache hit rate")
        .sample("sglang:cache_hit_rate", labels, load.cacheHitRate)
        .family("sglang:time_to_first_token_seconds", "histogram", "Histogram of time to first token in seconds.")
        .histogram("sglang:time_to_first_token_seconds", labels, this.ttft)
        .family("sglang:e2e_request_latency_seconds", "histogram", "Histogram of End-to-end request latency in seconds")
        .histogram("sglang:e2e_request_latency_seconds", labels, this.e2e)
        .family("sglang:time_per_output_token_seconds", "histogram", "Histogram of time per output token in seconds.")
        .histogram("sglang:time_per_output_token_seconds", labels, this.tpot)
        .family("sglang:func_latency_seconds", "histogram", "Function latency in seconds")
        .histogram("sglang:func_latency_seconds", { name: "generate_request" }, this.funcLatency)
        .family("sglang:num_running_reqs", "gauge", "The number of running requests")
        .sample("sglang:num_running_reqs", labels, load.running)
        .family("sglang:num_used_tokens", "gauge", "The number of used tokens")
        .sample("sglang:num_used_tokens", labels, load.usedTokens)
        .family("sglang:gen_throughput", "gauge", "The generate throughput (token/s)")
        .sample("sglang:gen_throughput", labels, this.throughput)
        .family("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue")
        .sample("sglang:num_queue_reqs", labels, load.waiting);
      return out.toString();
    }
    const params = this.engine.params;
    out
      .family("vllm:cache_config_info", "gauge")
      .sample(
        "vllm:cache_config_info",
        {
          block_size: String(params.blockTokens),
          cache_dtype: "auto",
          calculate_kv_scales: "False",
          cpu_offload_gb: "0",
          enable_prefix_caching: "True",
          gpu_memory_utilization: "0.9",
          is_attention_free: "False",
          num_cpu_blocks: "0",
          num_gpu_blocks: String(Math.floor(params.kvCapacityTokens / params.blockTokens)),
          num_gpu_blocks_override: "None",
          sliding_window: "None",
          swap_space_bytes: "0",
        },
        1,
      )
      .family("vllm:num_requests_running", "gauge", "Number of requests currently running on GPU.")
      .sample("vllm:num_requests_running", labels, load.running)
      .family("vllm:num_requests_swapped", "gauge", "Number of requests swapped to CPU.")
      .sample("vllm:num_requests_swapped", labels, 0)
      .family("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.")
      .sample("vllm:num_requests_waiting", labels, load.waiting)
      .family("vllm:gpu_cache_usage_perc", "gauge", "GPU KV-cache usage. 1 means 100 percent usage.")
      .sample("vllm:gpu_cache_usage_perc", labels, load.tokenUsage)
      .family("vllm:cpu_cache_usage_perc", "gauge", "CPU KV-cache usage. 1 means 100 percent usage.")
      .sample("vllm:cpu_cache_usage_perc", labels, 0)
      // No CPU tier is modelled; vLLM reports -1 for a cache that does not exist.
      .family("vllm:cpu_prefix_cache_hit_rate", "gauge", "CPU prefix cache block hit rate.")
      .sample("vllm:cpu_prefix_cache_hit_rate", labels, -1)
      .family("vllm:gpu_prefix_cache_hit_rate", "gauge", "GPU prefix cache block hit rate.")
      .sample("vllm:gpu_prefix_cache_hit_rate", labels, load.cacheHitRate)
      .family("vllm:lora_requests_info", "gauge", "Running stats on lora requests.")
      .sample("vllm:lora_requests_info", { max_lora: "0", running_lora_adapters: "", waiting_lora_adapters: "" }, this.startedAtSec)
      .family("vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.")
      .sample("vllm:num_preemptions_total", labels, load.preemptionsTotal)
      .family("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.")
      .sample("vllm:prompt_tokens_total", labels, load.promptTokensTotal)
      .family("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.")
      .sample("vllm:generation_tokens_total", labels, load.generationTokensTotal)
      .family("vllm:request_success_total", "counter", "Count of successfully processed requests.")
      .sample("vllm:request_success_total", { finished_reason: "length", ...labels }, this.finished.length)
      .sample("vllm:request_success_total", { finished_reason: "stop", ...labels }, this.finished.stop)
      .family("vllm:iteration_tokens_total", "histogram", "Histogram of number of tokens per engine_step.")
      .histogram("vllm:iteration_tokens_total", labels, this.iterationTokens)
      .family("vllm:time_to_first_token_seconds", "histogram", "Histogram of time to first token in seconds.")
      .histogram("vllm:time_to_first_token_seconds", labels, this.ttft)
      .family("vllm:time_per_output_token_seconds", "histogram", "Histogram of time per output token in seconds.")
      .histogram("vllm:time_per_output_token_seconds", labels, this.tpot)
      .family("vllm:e2e_request_latency_seconds", "histogram", "Histogram of end to end request latency in seconds.")
      .histogram("vllm:e2e_request_latency_seconds", labels, this.e2e);
    return out.toString();
  }
}
