// dynamo-kv: NVIDIA Dynamo's KV router cost, following its current source.
//
// Source: ai-dynamo/dynamo, lib/kv-router (the router moved there from lib/llm/src/kv_router):
//   src/scheduling/selector/default.rs at commit a4bdb9bfa1eed0afd4d67331f0938f9d5e3b58ed
//     (worker_logit: the cost; pick_default_worker / softmax_sample_index: the choice);
//   src/scheduling/config.rs, the KvRouterConfig::default() of the same line (the one that defines
//     default_decode_active_request_weight and default_overlap_score_credit_decay);
//   src/sequences (WorkerLoadProjection::potential_decode_blocks; prefill tokens reserved until the
//     first response, blocks until free) and src/approx.rs (approximate indexer: 120 s TTL).
//
// Per worker, in KV blocks:
//   raw_prefill  = (active_prefill_tokens + prompt_tokens) / block_size
//   credit       = overlap_score_credit · decay · overlap_blocks      (decay = 1 by default)
//   decode       = active_blocks + the prompt's blocks its live requests do not already hold
//   cost         = prefill_load_scale · max(raw_prefill − credit, 0) + decode
//                  + decode_active_request_weight · active_requests
// Temperature 0 → the cheapest worker, ties at random. Temperature T > 0 → sample with probability
// ∝ exp(−(cost − min) / ((max − min) · T)), uniform when every cost is equal. The chosen worker's
// approximate index learns the prompt, and its books gain the request, at dispatch; its prefill tokens
// leave the books at its first token, its blocks at completion.
//
// Parameters and Dynamo's defaults: overlapScoreCredit 1.0, overlapScoreCreditDecay 0.0 (off),
// prefillLoadScale 1.0, decodeActiveRequestWeight 0.0, routerTemperature 0.0; approximate mode
// (--no-kv-events): ttlMs 120000 (router_ttl_secs), maxTreeSizeBlocks 2^20 (PruneConfig), block
// size kvBlockTokens 16 (the engine's; vLLM's default). Dynamo's host/disk/shared-cache credits are
// for tiers the LB cannot see and are left out (their blocks count 0).
//
// Approximated, and why:
//  - Overlap. Dynamo's default reads exact KV events from the engines; the LB has only HTTP, so this
//    is Dynamo's approximate mode: an index fed by its own routing decisions that forgets after 120 s
//    (refreshed when a prompt is routed again), kept in a PrefixIndex owned by the policy.
//  - Blocks. Costs are counted in the LB's key blocks (tokensPerBlock tokens) instead of the
//    engine's KV blocks. Every term scales by the same factor, so the argmin and the temperature's
//    range-normalised softmax are unchanged; only the rounding of partial blocks differs.
//  - Decode blocks. With router_track_output_blocks off (the default) Dynamo counts only live
//    requests' prompt blocks, so no output progress is needed: the dispatch / first-token /
//    complete events the LB core reports carry everything the books need.
//  - Not modelled: Dynamo's admission queue (router_queue_threshold; the LB core's hold queue does
//    that job) and the replica-sync of books between router instances (each LB keeps its own).
//  - Our bound, not Dynamo's: at most maxTrackedRequests live requests are booked (see
//    dynamo-active.ts) so lost "complete" events cannot grow memory without limit.

import type { PrefixIndex } from "../prefix-index";
import type { CandidateView, RequestView, Rng } from "../types";
import { ActiveSequences } from "./dynamo-active";
import {
  type Policy,
  type PolicyEvent,
  argminRandomTie,
  checkDecisionInput,
  checkPolicyEvent,
  decide,
  learnDispatched,
  matchedBlocksOf,
  numberOption,
  ownIndexDepths,
  PEER_INDEX_MAX_ROUTES,
  preparedFrom,
} from "./common";
import type { DynamoKvOptions } from "./peer-options";

export function createDynamoKvPolicy(options: DynamoKvOptions = {}): Policy {
  const o = options ?? {};
  const credit = numberOption("options.dynamo.overlapScoreCredit", o.overlapScoreCredit, 1, { min: 0 });
  const decay = numberOption("options.dynamo.overlapScoreCreditDecay", o.overlapScoreCreditDecay, 0, { min: 0 });
  const prefillScale = numberOption("options.dynamo.prefillLoadScale", o.prefillLoadScale, 1, { min: 0 });
  const requestWeight = numberOption("options.dynamo.decodeActiveRequestWeight", o.decodeActiveRequestWeight, 0, { min: 0 });
  const temperature = numberOption("options.dynamo.routerTemperature", o.routerTemperature, 0, { min: 0 });
  const ttlMs = numberOption("options.dynamo.ttlMs", o.ttlMs, 120_000, { above: 0 });
  const maxTreeBlocks = numberOption("options.dynamo.maxTreeSizeBlocks", o.maxTreeSizeBlocks, 2 ** 20, { min: 1, integer: true });
  const kvBlockTokens = numberOption("options.dynamo.kvBlockTokens", o.kvBlockTokens, 16, { above: 0 });
  const maxTracked = numberOption("options.dynamo.maxTrackedRequests", o.maxTrackedRequests, 65_536, { min: 1, integer: true });

  let index: PrefixIndex | null = null; // built at the first dispatch, when the block size is known
  const active = new ActiveSequences(maxTracked);

  /** Dynamo's cost for every candidate (lower is better), from its own index and books. */
  function costs(request: RequestView, candidates: readonly CandidateView[], eligible: boolean[], depths: number[]): number[] {
    const tpb = request.tokensPerBlock;
    const isl = request.inputTokens;
    const loads = candidates.map((c) => active.load(c.id));
    let minActivePrefill = 0;
    if (decay > 0) {
      minActivePrefill = Infinity;
      for (let i = 0; i < candidates.length; i++) if (eligible[i]) minActivePrefill = Math.min(minActivePrefill, loads[i]!.activePrefillTokens);
    }
    const requestBlocks = Math.max(1, Math.ceil(isl / tpb));
    return candidates.map((c, i) => {
      const load = loads[i]!;
      const overlap = depths[i] as number;
      const rawPrefillBlocks = (load.activePrefillTokens + Math.max(isl, overlap * tpb)) / tpb;
      const decayFactor = decay > 0 ? 1 / (1 + (decay * (load.activePrefillTokens - minActivePrefill)) / tpb / requestBlocks) : 1;
      const prefillCost = prefillScale * Math.max(rawPrefillBlocks - credit * decayFactor * overlap, 0);
      const decodeCost = load.activeBlocks + (request.keys.length - active.sharedPrefix(c.id, request.keys));
      return prefillCost + decodeCost + requestWeight * load.activeRequests;
    });
  }

  return {
    name: "dynamo-kv",
    usesCostWeights: false,
    select(request, candidates, ctx) {
      const eligible = checkDecisionInput(request, candidates, ctx);
      const depths = ownIndexDepths(index, request, candidates, ctx.now);
      const cost = costs(request, candidates, eligible, depths);
      const p = preparedFrom(request, candidates, eligible, depths);
      if (temperature === 0) return decide(p, cost, argminRandomTie(cost, eligible, ctx.rng));
      return decide(p, cost, softmaxSample(cost, eligible, temperature, ctx.rng), `softmax(T=${temperature})`);
    },
    observe(event: PolicyEvent) {
      checkPolicyEvent(event);
      if (event.kind === "replica-removed") {
        // Dynamo drops a worker that leaves: what it held and the load booked on it.
        index?.removeReplica(event.replicaId);
        return active.removeWorker(event.replicaId);
      }
      if (event.kind === "first-token") return active.markPrefillCompleted(event.requestId);
      if (event.kind === "complete") return active.free(event.requestId);
      const { request, replicaId } = event;
      index = learnDispatched(index, event, () => {
        const routes = Math.ceil((maxTreeBlocks * kvBlockTokens) / request.tokensPerBlock);
        return { capacityBlocks: Math.max(1, Math.min(PEER_INDEX_MAX_ROUTES, routes)), ttlMs };
      });
      const cached = Math.min(matchedBlocksOf(event.decision, replicaId) * request.tokensPerBlock, request.inputTokens);
      active.add(event.requestId, replicaId, request.keys, request.inputTokens - cached);
    },
  };
}

/** Dynamo's softmax over range-normalised costs: P(i) ∝ exp(−(c_i − min) / ((max − min)·T)). */
export function softmaxSample(costs: readonly number[], allowed: readonly boolean[], temperature: number, rng: Rng): number {
  let min = Infinity;
  let max = -Infinity;
  let last = -1;
  for (let i = 0; i < costs.length; i++) {
    if (!allowed[i]) continue;
    min = Math.min(min, costs[i] as number);
    max = Math.max(max, costs[i] as number);
    last = i;
  }
  const weights = costs.map((c, i) => (!allowed[i] ? 0 : max === min ? 1 : Math.exp(-(c - min) / ((max - min) * temperature))));
  const sum = weights.reduce((s, w) => s + w, 0);
  const u = rng.next();
  let cumulative = 0;
  for (let i = 0; i < weights.length; i++) {
    if (!allowed[i]) continue;
    cumulative += (weights[i] as number) / sum;
    if (u <= cumulative) return i;
  }
  return last;
}
