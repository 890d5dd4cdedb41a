// The peer routers' parameters, as createPolicy(name, { sglang | llmd | dynamo }) takes them. Each
// field's default and its meaning are in the policy's own file header (sglang-cache-aware.ts,
// llm-d.ts, dynamo-kv.ts). Kept apart so the shared plumbing (common.ts) need not import the peers.

export interface SglangCacheAwareOptions {
  cacheThreshold?: number;
  balanceAbsThreshold?: number;
  balanceRelThreshold?: number;
  balanceTokenUsageThreshold?: number;
  overloadTokenUsageThreshold?: number;
  maxTreeSizeChars?: number;
}

export interface LlmdOptions {
  prefixWeight?: number;
  kvCacheWeight?: number;
  queueWeight?: number;
  blockSizeTokens?: number;
  maxPrefixTokensToMatch?: number;
  matchLengthWeight?: number;
  matchLengthScaleTokens?: number;
  lruCapacityPerServer?: number;
  engineBlockTokens?: number;
}

export interface DynamoKvOptions {
  overlapScoreCredit?: number;
  overlapScoreCreditDecay?: number;
  prefillLoadScale?: number;
  decodeActiveRequestWeight?: number;
  routerTemperature?: number;
  ttlMs?: number;
  maxTreeSizeBlocks?: number;
  kvBlockTokens?: number;
  maxTrackedRequests?: number;
}
