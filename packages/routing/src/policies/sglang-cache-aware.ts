// sglang-cache-aware: the SGLang router's cache-aware policy, following its current source.
//
// Source: lightseekorg/smg, the SGLang Model Gateway (sgl-project/sglang's sgl-router, renamed
// sgl-model-gateway, now developed there), at commit 73da68ca9472bbc0ff5f63d31a8a21fbb8696359
// (2026-08-07): model_gateway/src/policies/cache_aware.rs (last changed in 9f2fd591),
// CacheAwareConfig::default() in model_gateway/src/policies/mod.rs, the CLI defaults in
// model_gateway/src/main.rs and bindings/python/src/smg/router_args.py, and the approximate string
// tree in crates/kv_index/src/string_tree.rs. sgl-project/sglang's copy
// (sgl-model-gateway/src/policies/cache_aware.rs at 053b63ff) has the same three rules.
//
// Per request:
//   1. The pool is imbalanced when (max − min) > balance_abs_threshold AND max > min ×
//      balance_rel_threshold over the healthy workers' loads (the router's own count of requests in
//      flight on each), or when a KV-usage trigger fires (both off by default). Imbalanced → the
//      least-loaded worker; ties go to the fewest requests routed there so far, then list order.
//   2. Balanced → match the prompt in the approximate tree. If matched / prompt > cache_threshold,
//      the worker holding the deepest match (the one that inserted that tree node first); else the
//      least-loaded worker, exactly as in 1.
//   3. The chosen worker's tree learns the prompt (SGLang inserts during selection; here at the
//      "dispatch" event, which the LB core reports right after select(); see common.ts).
//
// Parameters. Defaults are the CLI's (`smg` and `python -m sglang_router.launch_router`), because
// that is what an operator who starts the router runs; the library's CacheAwareConfig::default()
// differs and is given in brackets:
//   cacheThreshold 0.3 [0.5]; balanceAbsThreshold 64 [32]; balanceRelThreshold 1.5 [1.1];
//   balanceTokenUsageThreshold 1.0 [1.0] and overloadTokenUsageThreshold 1.0 [1.0] (≥ 1 disables);
//   maxTreeSizeChars 2^26 per worker [10,000] (evicted every 120 s [30 s]).
//
// Approximated, and why:
//  - The tree. SGLang keeps one character radix tree for all workers, fed with raw request text. The
//    LB keys prompts into chained 64-character blocks (keys.ts), so this policy keeps its own
//    PrefixIndex of those keys: the same prefix information at 64-character granularity. It is the
//    policy's own, not the LB's index, because SGLang learns at selection time and never from the
//    engines; the LB's index learns at first byte and is being corrected from engine reports.
//  - Match rate. SGLang divides matched characters by prompt characters; we divide matched blocks ×
//    tokensPerBlock by the prompt's token estimate, the same ratio for chat keys (both come from the
//    LB's one chars-per-token estimate) and block-granular for trace keys.
//  - The deepest holder. SGLang returns the tenant that created the deepest matched node; PrefixIndex
//    lists a block's routes newest first, so the last holder listed is that tenant.
//  - "Smallest tree". The source's header comment still says a low match goes to the worker with the
//    smallest tree; its code (since the sgl-model-gateway rewrite; the 2024 sgl-router used
//    get_smallest_tenant) sends it to the least-loaded worker. We follow the code.
//  - Eviction. SGLang evicts each worker's least recently used leaves above max_tree_size every
//    eviction interval; PrefixIndex evicts least recently used routes as soon as it is full, under one
//    budget for all workers: the per-worker budget × the candidates at the first dispatch, capped at
//    PEER_INDEX_MAX_ROUTES (2^21 routes, ~140 MB, common.ts) so the policy's memory stays bounded.
//  - KV-usage triggers need a KV utilization, which needs CandidateView.kvCapacityTokens; without it
//    they do not fire, as in the source when no backend load snapshot is wired.

import type { PrefixIndex } from "../prefix-index";
import type { CandidateView, RequestView } from "../types";
import {
  type Policy,
  type PolicyEvent,
  checkDecisionInput,
  checkPolicyEvent,
  decide,
  kvUtilization,
  learnDispatched,
  numberOption,
  ownIndexDepths,
  PEER_INDEX_MAX_ROUTES,
  preparedFrom,
} from "./common";
import type { SglangCacheAwareOptions } from "./peer-options";

/** Replica ids whose routed-request counts (the load tie-break) are kept at once. */
const MAX_COUNTED_REPLICAS = 4096;
/** Characters per token for turning block tokens into SGLang's character budget (the LB's default
 * estimate, token-estimator.ts). */
const CHARS_PER_TOKEN = 4;

export function createSglangCacheAwarePolicy(options: SglangCacheAwareOptions = {}): Policy {
  const o = options ?? {};
  const cacheThreshold = numberOption("options.sglang.cacheThreshold", o.cacheThreshold, 0.3, { min: 0, max: 1 });
  const balanceAbs = numberOption("options.sglang.balanceAbsThreshold", o.balanceAbsThreshold, 64, { min: 0 });
  const balanceRel = numberOption("options.sglang.balanceRelThreshold", o.balanceRelThreshold, 1.5, { min: 0 });
  const usageSpread = numberOption("options.sglang.balanceTokenUsageThreshold", o.balanceTokenUsageThreshold, 1, { above: 0 });
  const usageCeiling = numberOption("options.sglang.overloadTokenUsageThreshold", o.overloadTokenUsageThreshold, 1, { above: 0 });
  const maxTreeChars = numberOption("options.sglang.maxTreeSizeChars", o.maxTreeSizeChars, 2 ** 26, { min: 1 });

  let tree: PrefixIndex | null = null; // built at the first dispatch, when the block size is known
  const processed = new Map<string, number>();

  function isImbalanced(candidates: readonly CandidateView[], eligible: boolean[], minLoad: number, maxLoad: number): boolean {
    let minUsage = Infinity;
    let maxUsage = -Infinity;
    for (let i = 0; i < candidates.length; i++) {
      if (!eligible[i]) continue;
      const u = kvUtilization(candidates[i] as CandidateView);
      if (u === null) continue;
      if (u < minUsage) minUsage = u;
      if (u > maxUsage) maxUsage = u;
    }
    if (maxUsage >= 0 && (maxUsage > usageCeiling || maxUsage - minUsage > usageSpread)) return true;
    return maxLoad - minLoad > balanceAbs && maxLoad > minLoad * balanceRel;
  }

  /** Least-loaded eligible candidate; ties: fewer requests routed there by this policy, then order. */
  function leastLoaded(candidates: readonly CandidateView[], eligible: boolean[]): number {
    let best = -1;
    for (let i = 0; i < candidates.length; i++) {
      if (!eligible[i]) continue;
      if (best === -1) {
        best = i;
        continue;
      }
      const c = candidates[i] as CandidateView;
      const b = candidates[best] as CandidateView;
      if (c.inFlight < b.inFlight || (c.inFlight === b.inFlight && (processed.get(c.id) ?? 0) < (processed.get(b.id) ?? 0))) best = i;
    }
    return best;
  }

  /** The candidate SGLang would name for the deepest match: among those holding the deepest block,
   * the one that learned it first (PrefixIndex lists a block's routes newest first). */
  function deepestHolder(request: RequestView, candidates: readonly CandidateView[], depths: number[], deepest: number): number {
    let holder = -1;
    for (const route of (tree as PrefixIndex).routesOf(request.keys[deepest - 1] as number)) {
      const i = candidates.findIndex((c) => c.id === route.replicaId);
      if (i >= 0 && depths[i] === deepest) holder = i;
    }
    return holder >= 0 ? holder : depths.indexOf(deepest);
  }

  return {
    name: "sglang-cache-aware",
    usesCostWeights: false,
    select(request, candidates, ctx) {
      const eligible = checkDecisionInput(request, candidates, ctx);
      const depths = ownIndexDepths(tree, request, candidates, ctx.now);
      const p = preparedFrom(request, candidates, eligible, depths);
      let minLoad = Infinity;
      let maxLoad = 0;
      for (let i = 0; i < candidates.length; i++) {
        if (!eligible[i]) continue;
        const load = (candidates[i] as CandidateView).inFlight;
        if (load < minLoad) minLoad = load;
        if (load > maxLoad) maxLoad = load;
      }
      const loads = candidates.map((c) => c.inFlight);
      const shortest = leastLoaded(candidates, eligible);
      if (isImbalanced(candidates, eligible, minLoad, maxLoad)) {
        return decide(p, loads, shortest, "fallback:shortest-queue (load imbalanced)");
      }
      // Balanced: the deepest match over every candidate the tree knows, healthy or not, as SGLang
      // matches its whole tree and only then checks the tenant's health.
      let deepest = 0;
      for (const d of depths) if (d > deepest) deepest = d;
      const matchRate = request.inputTokens > 0 ? Math.min(1, (deepest * request.tokensPerBlock) / request.inputTokens) : 0;
      const unmatched = depths.map((d) => (request.inputTokens > 0 ? 1 - Math.min(1, (d * request.tokensPerBlock) / request.inputTokens) : 1));
      if (matchRate <= cacheThreshold) {
        return decide(p, unmatched, shortest, `fallback:least-load (match rate ${round3(matchRate)} <= cache_threshold)`);
      }
      const holder = deepestHolder(request, candidates, depths, deepest);
      if (!eligible[holder]) {
        // SGLang: a cache hit on an unhealthy worker falls to the first healthy worker.
        return decide(p, unmatched, eligible.indexOf(true), "fallback:first-healthy (deepest match is unhealthy)");
      }
      return decide(p, unmatched, holder);
    },
    observe(event: PolicyEvent) {
      checkPolicyEvent(event);
      if (event.kind === "replica-removed") {
        // SGLang's router removes a worker's tenant from the tree when the worker leaves.
        tree?.removeReplica(event.replicaId);
        processed.delete(event.replicaId);
        return;
      }
      if (event.kind !== "dispatch") return; // SGLang's load is the LB's own in-flight count
      const { request, replicaId } = event;
      tree = learnDispatched(tree, event, () => {
        const perWorker = Math.max(1, Math.floor(maxTreeChars / (request.tokensPerBlock * CHARS_PER_TOKEN)));
        const workers = Math.max(1, event.decision.scores.length);
        return { capacityBlocks: Math.min(PEER_INDEX_MAX_ROUTES, perWorker * workers), ttlMs: Number.POSITIVE_INFINITY };
      });
      // Bounded by the replica ids seen; a fleet that churns through more starts the counts afresh.
      if (processed.size >= MAX_COUNTED_REPLICAS && !processed.has(replicaId)) processed.clear();
      processed.set(replicaId, (processed.get(replicaId) ?? 0) + 1);
    },
  };
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
