// The oracle index (`meridian-sim --index oracle`): every LB reads the engines' true prefix-cache
// state at dispatch instead of its own prefix index. No live LB can do this; it is the upper bound
// every real index is measured against (prediction accuracy 1 at dispatch, up to the engine's own
// changes between dispatch and admission).
import type { BlockKey, MatchResult, PrefixMatcher } from "@meridian/routing";

/** What the oracle needs of an engine: its longest cached prefix of a key chain, without touching LRU. */
export interface CacheProbe {
  cachedPrefixBlocks(keys: readonly BlockKey[]): number;
}

export class OracleIndex implements PrefixMatcher {
  constructor(private readonly engines: ReadonlyMap<string, CacheProbe>) {}

  match(keys: readonly BlockKey[], _now: number, only?: readonly string[]): MatchResult {
    const depthByReplica = new Map<string, number>();
    let maxDepth = 0;
    for (const id of only ?? this.engines.keys()) {
      const depth = keys.length === 0 ? 0 : (this.engines.get(id)?.cachedPrefixBlocks(keys) ?? 0);
      if (only !== undefined || depth > 0) depthByReplica.set(id, depth);
      if (depth > maxDepth) maxDepth = depth;
    }
    return { depthByReplica, maxDepth };
  }
}
