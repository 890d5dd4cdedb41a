// What the prefix index takes and returns (prefix-index.ts holds the index itself).
import type { BlockKey, Trust } from "./types";

export interface PrefixIndexOptions {
  /** Upper bound on stored routes, i.e. (block, replica) pairs. Not distinct blocks. */
  capacityBlocks: number;
  /** Routes older than this since last learned are ignored and reclaimed. Default 1 h. */
  ttlMs?: number;
  /** Most replicas (or peers) one block may list; the oldest-learned route on the block makes room.
   * Bounds the per-block chain walk, so lookups stay O(1) whatever ids arrive. Default 64. */
  maxReplicasPerBlock?: number;
}

export interface MatchResult {
  /** Matched depth (leading blocks held) per replica. When `only` was given, every listed id is
   * present (0 when nothing matched); otherwise only replicas with depth ≥ 1. */
  depthByReplica: Map<string, number>;
  maxDepth: number;
}

/** LOCAL block keys, most recently used first; what one LB shares with its peers. */
export type PrefixSnapshot = BlockKey[];

export interface RouteInfo {
  replicaId: string;
  lastUse: number;
  learnedAt: number;
  trust: Trust;
}

export interface PrefixIndexStats {
  /** Stored (block, replica) pairs. */
  routes: number;
  /** Distinct blocks stored. */
  blocks: number;
  localRoutes: number;
  remoteRoutes: number;
  /** Distinct replica / peer ids with at least one route. */
  replicas: number;
  capacityBlocks: number;
  ttlMs: number;
  /** Routes evicted for capacity. */
  evictions: number;
  /** Routes reclaimed because their TTL ran out. */
  expirations: number;
  /** match() calls that found at least one block. */
  hits: number;
  /** match() calls. */
  lookups: number;
  /** Sum over match() calls of the deepest match, for an average-depth gauge. */
  matchedBlocks: number;
}
