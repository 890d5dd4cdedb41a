import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { parsePrometheusText, parseSampleLine, sumOf } from "./prometheus-text";
import { readEngineLoad } from "./engine-metrics";

const fixture = (name: string): string => readFileSync(new URL(`../test/fixtures/${name}`, import.meta.url), "utf8");

test("parses the real vLLM v0.7 scrape: no leading HELP, empty label values, -1 values, truncated histogram", () => {
  const parsed = parsePrometheusText(fixture("vllm-metrics-v0.7-aibrix-docs.txt"));
  assert.equal(parsed.skippedLines, 0);
  assert.equal(parsed.families.get("vllm:cache_config_info")?.type, "gauge");
  assert.equal(parsed.families.get("vllm:cache_config_info")?.help, undefined);
  const lora = parsed.samples.find((s) => s.name === "vllm:lora_requests_info");
  assert.deepEqual(lora?.labels, { max_lora: "0", running_lora_adapters: "", waiting_lora_adapters: "" });
  assert.equal(lora?.value, 1.7382173358407154e9);
  assert.equal(sumOf(parsed, "vllm:gpu_prefix_cache_hit_rate"), -1);
  const buckets = parsed.samples.filter((s) => s.name === "vllm:iteration_tokens_total_bucket");
  assert.equal(buckets.length, 15);
  assert.equal(buckets.at(-1)?.labels["le"], "96.0");
  assert.equal(sumOf(parsed, "vllm:iteration_tokens_total_count"), undefined);
});

test("parses the real SGLang scrape with scientific notation and +Inf buckets", () => {
  const parsed = parsePrometheusText(fixture("sglang-metrics-docs-example.txt"));
  assert.equal(parsed.skippedLines, 0);
  assert.equal(sumOf(parsed, "sglang:prompt_tokens_total"), 8_128_902);
  assert.equal(sumOf(parsed, "sglang:num_queue_reqs"), 2826);
  const inf = parsed.samples.find((s) => s.name === "sglang:time_to_first_token_seconds_bucket" && s.labels["le"] === "+Inf");
  assert.equal(inf?.value, 11008);
  assert.equal(parsed.families.get("sglang:token_usage")?.help, "The token usage");
});

test("reads engine load in both dialects from the real scrapes", () => {
  const sglang = readEngineLoad(fixture("sglang-metrics-docs-example.txt"));
  assert.deepEqual(
    { dialect: sglang.dialect, load: sglang.load },
    {
      dialect: "sglang",
      load: { running: 162, waiting: 2826, usedTokens: 123_859 },
    },
  );
  const vllm = readEngineLoad(fixture("vllm-metrics-v0.7-aibrix-docs.txt"), "vllm");
  assert.deepEqual(
    { dialect: vllm.dialect, load: vllm.load },
    {
      dialect: "vllm",
      load: { running: 0, waiting: 0, usedTokens: 0 },
    },
  );
  assert.throws(() => readEngineLoad("# nothing here\nfoo 1\n"), /neither SGLang nor vLLM/);
  assert.throws(() => readEngineLoad("sglang:token_usage 0.5\n"), /num_running_reqs/);
});

test("vLLM used tokens come from the usage fraction and the cache config", () => {
  const text = [
    'vllm:cache_config_info{block_size="16",num_gpu_blocks="1000"} 1.0',
    'vllm:num_requests_running{model_name="m"} 3',
    'vllm:num_requests_waiting{model_name="m"} 1',
    'vllm:gpu_cache_usage_perc{model_name="m"} 0.25',
  ].join("\n");
  assert.deepEqual(readEngineLoad(text).load, { running: 3, waiting: 1, usedTokens: 4000 });
});

test("label escapes, special values, timestamps, CRLF and garbage lines", () => {
  const parsed = parsePrometheusText(
    [
      'm{path="C:\\\\dir",quote="say \\"hi\\"",nl="a\\nb"} 1 1700000000000',
      "nan_metric NaN",
      "inf_metric +Inf",
      "neg_inf -Inf",
      "sci 1.5E-3\r",
      "prom_client_nan Nan",
      "# a free comment",
      'broken{a="x" 1',
      'truncated_metric{le="0.5"',
      "hexy 0x10",
      "",
    ].join("\n"),
  );
  const m = parsed.samples[0];
  assert.deepEqual(m?.labels, { path: "C:\\dir", quote: 'say "hi"', nl: "a\nb" });
  assert.equal(m?.timestampMs, 1_700_000_000_000);
  assert.ok(Number.isNaN(parsed.samples[1]?.value));
  assert.equal(parsed.samples[2]?.value, Infinity);
  assert.equal(parsed.samples[3]?.value, -Infinity);
  assert.equal(parsed.samples[4]?.value, 0.0015);
  assert.ok(Number.isNaN(parsed.samples[5]?.value));
  assert.equal(parsed.samples.length, 6);
  assert.equal(parsed.skippedLines, 3);
  assert.equal(parseSampleLine('x{a="1",} 2')?.value, 2);
});

test("sumOf adds the finite samples only: NaN and ±Inf state no quantity, and alone read as absent", () => {
  const parsed = parsePrometheusText(
    [
      'sglang:num_running_reqs{dp_rank="0"} 3',
      'sglang:num_running_reqs{dp_rank="1"} +Inf',
      'sglang:num_running_reqs{dp_rank="2"} NaN',
      'sglang:num_running_reqs{dp_rank="3"} 2',
      "sglang:num_queue_reqs +Inf",
      "sglang:num_queue_reqs -Inf",
      "sglang:token_usage -1",
    ].join("\n"),
  );
  assert.equal(parsed.skippedLines, 0);
  assert.equal(sumOf(parsed, "sglang:num_running_reqs"), 5);
  // +Inf + -Inf would be NaN; neither is a count.
  assert.equal(sumOf(parsed, "sglang:num_queue_reqs"), undefined);
  // A negative value is a number: the parser reports it, its reader judges it (lb-core refuses a negative gauge).
  assert.equal(sumOf(parsed, "sglang:token_usage"), -1);
});
