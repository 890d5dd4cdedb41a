import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { CacheTruth, engineRestarted, PrefixIndex, traceBlockKeys } from "@meridian/routing";
import { readEngineCache } from "./engine-cache";
import { readEngineLoad } from "./engine-metrics";
import { parsePrometheusText } from "./prometheus-text";

const fixture = (name: string): string => readFileSync(new URL(`../test/fixtures/${name}`, import.meta.url), "utf8");

test("SGLang (docs-example release, no max_total_num_tokens): capacity is num_used_tokens / token_usage", () => {
  const info = readEngineCache(parsePrometheusText(fixture("sglang-metrics-docs-example.txt")), "sglang");
  assert.equal(info.capacityTokens, Math.round(123_859 / 0.28));
  assert.equal(info.usedTokens, 123_859);
  assert.deepEqual(info.epoch, {
    startTimeSec: null,
    counters: {
      'prompt_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"}': 8_128_902,
      'generation_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"}': 7_557_572,
    },
  });
});

test("SGLang (current release): max_total_num_tokens, once per DP rank however many TP ranks repeat it", () => {
  // The label set current SGLang schedulers attach (collector.py @ 00ae9c15): two DP groups of two TP ranks.
  const line = (name: string, tp: number, dp: number, value: number) =>
    `sglang:${name}{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="${tp}",dp_rank="${dp}"} ${value}`;
  const text = [0, 1].flatMap((dp) => [0, 1].map((tp) => line("max_total_num_tokens", tp, dp, 262_144))).join("\n");
  assert.equal(readEngineCache(parsePrometheusText(text), "sglang").capacityTokens, 2 * 262_144);
  const idle = 'sglang:token_usage{model_name="m"} 0\nsglang:num_used_tokens{model_name="m"} 0\n';
  assert.equal(readEngineCache(parsePrometheusText(idle), "sglang").capacityTokens, null, "an idle old release says nothing");
});

test("SGLang load with every scheduler exporting: a DP group's running and queued requests count once per group, not per TP rank", () => {
  const line = (name: string, dp: number, tp: number, value: number) =>
    `sglang:${name}{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="${tp}",dp_rank="${dp}"} ${value}`;
  // Two DP groups of two TP ranks each; every rank repeats its group's gauges.
  const groups = [
    { dp: 0, running: 3, queued: 2 },
    { dp: 1, running: 5, queued: 0 },
  ];
  const text = groups
    .flatMap(({ dp, running, queued }) => [0, 1].flatMap((tp) => [line("num_running_reqs", dp, tp, running), line("num_queue_reqs", dp, tp, queued)]))
    .join("\n");
  const { load } = readEngineLoad(text, "sglang");
  assert.deepEqual([load.running, load.waiting], [8, 2]);
  // An engine without rank labels (one scheduler) reads as before.
  const plain = readEngineLoad("sglang:num_running_reqs 4\nsglang:num_queue_reqs 1\n", "sglang");
  assert.deepEqual([plain.load.running, plain.load.waiting], [4, 1]);
});

test("vLLM: capacity is num_gpu_blocks x block_size from cache_config_info, 0 without prefix caching", () => {
  const text = fixture("vllm-metrics-v0.7-aibrix-docs.txt");
  const off = readEngineCache(parsePrometheusText(text), "vllm");
  assert.equal(off.capacityTokens, 0, "the fixture's engine ran with enable_prefix_caching=False");
  assert.equal(off.blockTokens, 16);
  assert.deepEqual(off.epoch, {
    startTimeSec: null,
    counters: {
      'prompt_tokens_total{model_name="Qwen/Qwen2.5-Coder-1.5B-Instruct"}': 148,
      'generation_tokens_total{model_name="Qwen/Qwen2.5-Coder-1.5B-Instruct"}': 955,
    },
  });
  const on = readEngineCache(parsePrometheusText(text.replace('enable_prefix_caching="False"', 'enable_prefix_caching="True"')), "vllm");
  assert.equal(on.capacityTokens, 81_767 * 16);
  assert.equal(on.usedTokens, 0);
  // V1 (0.9+) names: kv_cache_usage_perc, and the process collector's start time.
  const v1 = [
    'vllm:cache_config_info{block_size="16",enable_prefix_caching="True",num_gpu_blocks="1000"} 1.0',
    'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25',
    "process_start_time_seconds 1.7e9",
  ].join("\n");
  const info = readEngineCache(parsePrometheusText(v1), "vllm");
  assert.deepEqual([info.capacityTokens, info.usedTokens, info.epoch?.startTimeSec], [16_000, 4_000, 1.7e9]);
});

test("metrics that say nothing give nulls, never an error", () => {
  for (const dialect of ["sglang", "vllm"] as const) {
    const info = readEngineCache(parsePrometheusText("# nothing\nfoo 1\n"), dialect);
    assert.deepEqual(info, { capacityTokens: null, kvTokens: null, usedTokens: null, blockTokens: null, epoch: null });
  }
});

test("the capacity read from either fixture sizes the replica's part of the LB's index", () => {
  const index = new PrefixIndex({ capacityBlocks: 1_000_000 });
  const truth = new CacheTruth(index);
  const sglang = readEngineCache(parsePrometheusText(fixture("sglang-metrics-docs-example.txt")), "sglang");
  truth.engineMetrics("sglang-1", sglang, 16, 0);
  assert.equal(index.replicaView("sglang-1").budget, Math.floor(Math.round(123_859 / 0.28) / 16));
  const vllmText = fixture("vllm-metrics-v0.7-aibrix-docs.txt").replace('enable_prefix_caching="False"', 'enable_prefix_caching="True"');
  truth.engineMetrics("vllm-1", readEngineCache(parsePrometheusText(vllmText), "vllm"), 16, 0);
  assert.equal(index.replicaView("vllm-1").budget, 81_767);
});

test("the simulated engine exports the same capacity and process identity in both dialects", async () => {
  const { EngineMetrics, EngineModel, DEMO_ENGINE_PARAMS } = await import("@meridian/sim");
  for (const dialect of ["sglang", "vllm"] as const) {
    const engine = new EngineModel("e", DEMO_ENGINE_PARAMS);
    const text = new EngineMetrics(engine, dialect, "m").render(0);
    const info = readEngineCache(parsePrometheusText(text), dialect);
    assert.equal(info.capacityTokens, DEMO_ENGINE_PARAMS.kvCapacityTokens, dialect);
    assert.deepEqual(info.epoch?.counters, { 'prompt_tokens_total{model_name="m"}': 0, 'generation_tokens_total{model_name="m"}': 0 }, dialect);
  }
});

// SGLang exports token_usage rounded to 2 decimals (scheduler: `round(token_usage, 2)`).
const TRUE_CAPACITY = 500_000;
const sglangScrape = (used: number, prompt = 1_000) => {
  const usage = Math.round((used / TRUE_CAPACITY) * 100) / 100;
  const text = `sglang:num_used_tokens{model_name="m"} ${used}\nsglang:token_usage{model_name="m"} ${usage}\nsglang:prompt_tokens_total{model_name="m"} ${prompt}\n`;
  return readEngineCache(parsePrometheusText(text), "sglang");
};

test("SGLang estimate from the rounded token_usage: none at low usage, within 5 % above it", () => {
  for (const used of [3_000, 7_400, 12_400, 47_000]) {
    assert.equal(sglangScrape(used).capacityTokens, null, `used ${used}: the 2-decimal usage is too coarse`);
    assert.equal(sglangScrape(used).capacityEstimated, true);
  }
  for (const used of [50_000, 76_000, 124_000, 250_000, 497_000]) {
    const capacity = sglangScrape(used).capacityTokens;
    assert.ok(capacity !== null && Math.abs(capacity - TRUE_CAPACITY) / TRUE_CAPACITY <= 0.05, `used ${used}: capacity ${capacity}`);
  }
});

test("SGLang estimate with DP ranks: each rank's used tokens over its own usage, summed", () => {
  // Two DP ranks of 250k tokens (two TP ranks each, repeating their values); rank 0 at 0.2, rank 1 at 0.6.
  const line = (name: string, tp: number, dp: number, value: number) => `sglang:${name}{tp_rank="${tp}",dp_rank="${dp}"} ${value}`;
  const ranks = [
    { dp: 0, used: 50_000, usage: 0.2 },
    { dp: 1, used: 150_000, usage: 0.6 },
  ];
  const text = ranks.flatMap((r) => [0, 1].flatMap((tp) => [line("num_used_tokens", tp, r.dp, r.used), line("token_usage", tp, r.dp, r.usage)])).join("\n");
  assert.equal(readEngineCache(parsePrometheusText(text), "sglang").capacityTokens, 500_000);
  const idleRank = text
    .replace(/(token_usage\{tp_rank="\d",dp_rank="0"\}) 0.2/g, "$1 0.01")
    .replace(/(num_used_tokens\{tp_rank="\d",dp_rank="0"\}) 50000/g, "$1 2500");
  assert.equal(readEngineCache(parsePrometheusText(idleRank), "sglang").capacityTokens, null, "one rank's usage too coarse: no estimate");
});

test("a low SGLang reading of the same engine does not shrink the replica's budget and evict its routes", () => {
  const index = new PrefixIndex({ capacityBlocks: 1_000_000 });
  const truth = new CacheTruth(index);
  const TPB = 512;
  truth.engineMetrics("a", sglangScrape(250_000), TPB, 0); // busy: usage 0.5 gives the pool exactly, 976 blocks
  assert.equal(index.replicaView("a").budget, 976);
  const keys = traceBlockKeys(Array.from({ length: 900 }, (_, i) => i));
  index.learn(keys, "a", "LOCAL", 1);
  for (const used of [3_000, 76_000, 124_000, 0]) truth.engineMetrics("a", sglangScrape(used, 2_000), TPB, 2); // idle and rounded-low scrapes
  assert.equal(index.match(keys, 3, ["a"]).depthByReplica.get("a"), 900, `routes left: ${index.replicaView("a").routes}`);
  assert.equal(index.replicaView("a").budget, Math.floor(Math.round(76_000 / 0.15) / TPB), "the largest estimate of this engine stands");
  // The engine restarted (its prompt-token counter went back): its own estimate replaces the old one.
  truth.engineMetrics("a", sglangScrape(124_000, 10), TPB, 4);
  assert.equal(index.replicaView("a").budget, Math.floor(496_000 / TPB));
});

test("a counter series missing from one scrape is no restart; one that goes back is", () => {
  const series = (dp: number, value: number) => `sglang:prompt_tokens_total{model_name="m",dp_rank="${dp}"} ${value}`;
  const epochOf = (text: string) => readEngineCache(parsePrometheusText(text), "sglang").epoch!;
  const both = epochOf([series(0, 5_000), series(1, 7_000)].join("\n"));
  const rankLate = epochOf(series(0, 5_100)); // rank 1 answered after the scrape: the sum fell by 6,900
  assert.equal(engineRestarted(both, rankLate), false);
  assert.equal(engineRestarted(rankLate, epochOf([series(0, 5_200), series(1, 7_100)].join("\n"))), false);
  assert.equal(engineRestarted(both, epochOf([series(0, 10), series(1, 7_100)].join("\n"))), true, "rank 0's counter went back");
});
