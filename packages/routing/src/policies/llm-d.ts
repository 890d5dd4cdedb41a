// llm-d: the llm-d router's default scheduling profile, following its current source.
//
// Source: llm-d/llm-d-router (the llm-d inference scheduler, renamed; the Endpoint Picker code of
// kubernetes-sigs/gateway-api-inference-extension was merged into it) at commit
// ebab687927f5331c1b39defcb579a07951bce56c (2026-08-21):
//   pkg/epp/config/loader/defaults.go                     the default profile and its weights
//   pkg/epp/scheduling/scheduler_profile.go               weighted sum, each score clamped to [0, 1]
//   pkg/epp/framework/plugins/picker/maxscore/picker.go   max score, ties shuffled
//   pkg/epp/framework/plugins/scheduling/scorer/prefix/plugin.go               prefix-cache-scorer
//   pkg/epp/framework/plugins/scheduling/scorer/queuedepth/queue.go            queue-scorer
//   pkg/epp/framework/plugins/scheduling/scorer/kvcacheutilization/kvcache_utilization.go
//   pkg/epp/framework/plugins/requestcontrol/dataproducer/approximateprefix/{plugin,types,indexer}.go
//   pkg/epp/framework/plugins/requestcontrol/dataproducer/prefixhash/hashing.go
//   pkg/epp/framework/plugins/requestcontrol/dataproducer/tokenizer/estimate.go (4 bytes per token)
//
// Per request, over the healthy candidates:
//   prefix = matched blocks / prompt blocks (approximate producer: the prompt packed 4 bytes per
//            pseudo-token, hashed in chained blocks of 64 tokens; per-server LRU of hashes);
//   queue  = (max waiting − waiting) / (max waiting − min waiting), 1 for all when they are equal;
//   kv     = 1 − KV-cache utilization;
//   score  = 3·prefix + 2·kv + 2·queue; the highest wins, ties at random. The chosen server's LRU
//            learns the prompt's hashes after the decision (llm-d's PreRequest; our "dispatch").
//
// Parameters and llm-d's defaults:
//   prefixWeight 3, kvCacheWeight 2, queueWeight 2 — the EPP's built-in default profile
//     (loadDefaultConfig). Older sample configs and guides used 2:1:1; the code's default is 3:2:2.
//   blockSizeTokens 64 — defaultBlockSizeTokens 16 is auto-tuned from the engine's block size (16
//     on vLLM) and then raised to minBlockSizeTokens 64 for the index's memory (llm-d-router #1158).
//   maxPrefixTokensToMatch 131072 (defaultMaxPrefixTokens); matchLengthWeight 0 (and
//     matchLengthScaleTokens 8192, used only when the weight is > 0).
//   lruCapacityPerServer 31250 — used when the engine's num_gpu_blocks is unknown; with autoTune
//     (default on) the LRU holds num_gpu_blocks entries. engineBlockTokens 16 turns the replica's KV
//     capacity into num_gpu_blocks (vLLM's default block size, the one llm-d's comments assume).
//
// Approximated, and why:
//  - Hashing. llm-d hashes 64 pseudo-tokens of 4 bytes (256 bytes) per block, whatever the model's
//    tokenizer. Chat keys (RequestView.keyChars = 64) are chained per 64 characters, so one llm-d block
//    is every 4th key, fixed in characters and independent of the LB's calibrated chars-per-token (key
//    4j+3 identifies the prompt through byte 256(j+1), for ASCII text exactly). Trace keys (no keyChars:
//    blocks of tokens, e.g. 512 per hash_id) are grouped round(64 / tokensPerBlock) at a time, at
//    least one, so 512-token blocks are used one for one. llm-d also hashes the trailing partial
//    block, which can only match an identical prompt; we have no key for it but count it in the
//    prompt's blocks (the prompt's estimated tokens over the tokens of one block).
//  - LRU size. llm-d sizes each LRU to num_gpu_blocks entries of 64-token blocks, covering 4× the
//    engine's tokens. Chat blocks are llm-d's, so the LRU holds num_gpu_blocks of them; for trace
//    blocks larger than llm-d's we keep that coverage in tokens. num_gpu_blocks comes from
//    CandidateView.kvCapacityTokens; without it, the default 31250, as llm-d without the metric.
//  - KV utilization is usedTokens / kvCapacityTokens from the last scrape (vLLM kv_cache_usage_perc,
//    SGLang token_usage); without a capacity it reads 0, as llm-d reads a pod with no metrics, so the
//    KV scorer then gives every candidate 1 and decides nothing. Waiting is the scraped queue length.
//  - Not modelled: llm-d's flow-control saturation detector (admission, not placement: the LB core's
//    hold queue does that job) and its 50 ms metric refresh (the LB scrapes at its own interval).

import { RoutingInputError } from "../errors";
import type { BlockKey, CandidateView, RequestView } from "../types";
import { validateBlockKeys } from "../validate";
import { LlmdPrefixIndexer } from "./llm-d-index";
import {
  type Policy,
  type PolicyEvent,
  argminRandomTie,
  checkDecisionInput,
  checkPolicyEvent,
  decide,
  kvUtilization,
  numberOption,
  preparedFrom,
} from "./common";
import type { LlmdOptions } from "./peer-options";

/** llm-d's estimate token producer: bytes of prompt text per pseudo-token. */
const BYTES_PER_PSEUDO_TOKEN = 4;

/** Replica ids whose KV capacity this policy remembers for sizing LRUs; beyond it the memo restarts. */
const MAX_REMEMBERED_REPLICAS = 4096;

export function createLlmdPolicy(options: LlmdOptions = {}): Policy {
  const o = options ?? {};
  const wPrefix = numberOption("options.llmd.prefixWeight", o.prefixWeight, 3, { min: 0 });
  const wKv = numberOption("options.llmd.kvCacheWeight", o.kvCacheWeight, 2, { min: 0 });
  const wQueue = numberOption("options.llmd.queueWeight", o.queueWeight, 2, { min: 0 });
  const blockSizeTokens = numberOption("options.llmd.blockSizeTokens", o.blockSizeTokens, 64, { above: 0 });
  const maxPrefixTokens = numberOption("options.llmd.maxPrefixTokensToMatch", o.maxPrefixTokensToMatch, 131_072, { above: 0 });
  const lengthWeight = numberOption("options.llmd.matchLengthWeight", o.matchLengthWeight, 0, { min: 0, max: 1 });
  const lengthScale = numberOption("options.llmd.matchLengthScaleTokens", o.matchLengthScaleTokens, 8192, { above: 0 });
  const defaultLru = numberOption("options.llmd.lruCapacityPerServer", o.lruCapacityPerServer, 31_250, { min: 1, integer: true });
  const engineBlockTokens = numberOption("options.llmd.engineBlockTokens", o.engineBlockTokens, 16, { above: 0 });
  if (wPrefix + wKv + wQueue <= 0) throw new RoutingInputError("options.llmd", "at least one scorer weight must be > 0");

  const indexer = new LlmdPrefixIndexer();
  const capacityOf = new Map<string, number>();
  const counts = new Map<string, number>();

  /** Our keys per llm-d block, the block's size in llm-d's tokens (pseudo-tokens for chat keys), and
   * the llm-d blocks to hash for this request. */
  function blocksOf(request: RequestView): { group: number; blockTokens: number; hashes: BlockKey[]; total: number } {
    const keyChars = request.keyChars;
    let group: number;
    let blockTokens: number;
    if (keyChars === undefined) {
      // Trace keys: blocks of tokens.
      group = Math.max(1, Math.round(blockSizeTokens / request.tokensPerBlock));
      blockTokens = group * request.tokensPerBlock;
    } else {
      if (typeof keyChars !== "number" || !Number.isFinite(keyChars) || keyChars <= 0) {
        throw new RoutingInputError("request.keyChars", `must be a positive number, got ${String(keyChars)}`);
      }
      // Chat keys: llm-d's blocks are blockSizeTokens pseudo-tokens of 4 bytes (256 bytes = 4 keys).
      group = Math.max(1, Math.round((blockSizeTokens * BYTES_PER_PSEUDO_TOKEN) / keyChars));
      blockTokens = (group * keyChars) / BYTES_PER_PSEUDO_TOKEN;
    }
    const maxBlocks = Math.max(1, Math.floor(maxPrefixTokens / blockTokens));
    const hashes: BlockKey[] = [];
    for (let k = group - 1; k < request.keys.length && hashes.length < maxBlocks; k += group) hashes.push(request.keys[k] as BlockKey);
    // The prompt's blocks, the trailing partial one included: its estimated tokens over one block's
    // (group keys of tokensPerBlock tokens, the same ratio as characters for chat keys).
    const total = Math.min(maxBlocks, Math.max(hashes.length, Math.ceil(request.inputTokens / (group * request.tokensPerBlock))));
    return { group, blockTokens, hashes, total };
  }

  function lruEntries(replicaId: string, blockTokens: number): number {
    const capacity = capacityOf.get(replicaId);
    const gpuBlocks = capacity === undefined ? defaultLru : Math.max(1, Math.floor(capacity / engineBlockTokens));
    // llm-d's LRU holds gpuBlocks entries of blockSizeTokens tokens; keep that coverage in tokens.
    return Math.max(1, Math.floor((gpuBlocks * blockSizeTokens) / blockTokens));
  }

  return {
    name: "llm-d",
    usesCostWeights: false,
    select(request, candidates, ctx) {
      const eligible = checkDecisionInput(request, candidates, ctx);
      validateBlockKeys("keys", request.keys);
      if (capacityOf.size > MAX_REMEMBERED_REPLICAS) capacityOf.clear();
      for (const c of candidates) if (c.kvCapacityTokens !== undefined) capacityOf.set(c.id, c.kvCapacityTokens);

      const { group, blockTokens, hashes, total } = blocksOf(request);
      indexer.matchCounts(hashes, counts);
      let minWaiting = Infinity;
      let maxWaiting = -Infinity;
      for (let i = 0; i < candidates.length; i++) {
        if (!eligible[i]) continue;
        const w = waitingOf(candidates[i] as CandidateView);
        if (w < minWaiting) minWaiting = w;
        if (w > maxWaiting) maxWaiting = w;
      }
      const n = candidates.length;
      const negScores = new Array<number>(n);
      const depths = new Array<number>(n);
      for (let i = 0; i < n; i++) {
        const c = candidates[i] as CandidateView;
        const matched = counts.get(c.id) ?? 0;
        depths[i] = Math.min(request.keys.length, matched * group);
        let prefix = total > 0 ? matched / total : 0;
        if (lengthWeight > 0 && total > 0) {
          const length = Math.min(1, (matched * blockTokens) / lengthScale);
          prefix = lengthWeight * length * length + (1 - lengthWeight) * prefix;
        }
        const queue = maxWaiting === minWaiting ? 1 : (maxWaiting - waitingOf(c)) / (maxWaiting - minWaiting);
        const kv = 1 - (kvUtilization(c) ?? 0);
        negScores[i] = -(wPrefix * clamp01(prefix) + wKv * clamp01(kv) + wQueue * clamp01(queue));
      }
      const p = preparedFrom(request, candidates, eligible, depths);
      return decide(p, negScores, argminRandomTie(negScores, eligible, ctx.rng));
    },
    observe(event: PolicyEvent) {
      checkPolicyEvent(event);
      if (event.kind === "replica-removed") return indexer.removeServer(event.replicaId);
      if (event.kind !== "dispatch") return; // llm-d reads load from the engines' metrics only
      validateBlockKeys("event.request.keys", event.request.keys);
      const { blockTokens, hashes } = blocksOf(event.request);
      if (hashes.length > 0) indexer.add(hashes, event.replicaId, lruEntries(event.replicaId, blockTokens));
    },
  };
}

function waitingOf(c: CandidateView): number {
  return c.scraped ? c.scraped.waiting : 0;
}

function clamp01(x: number): number {
  return x < 0 ? 0 : x > 1 ? 1 : x;
}
