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

/** What a policy needs of an index: the depth each candidate holds. PrefixIndex is the one the LBs
 * run; the simulator's oracle answers from the engines' true cache state instead. */
export interface PrefixMatcher {
  match(keys: readonly BlockKey[], now: number, only?: readonly string[]): MatchResult;
}

/** Blocks [previous run's end, end) of a chain were last learned at `learnedAt`. */
export interface HoldingRun {
  end: number;
  learnedAt: number;
}

/** What the index held of one prompt on one replica at one moment, ignoring the replica's horizon:
 * the depth and the learn times along it (non-increasing, in runs). The cache-report feedback needs
 * it to judge a report "at the time of the request", after later requests re-learned the blocks. */
export interface HoldingProfile {
  depth: number;
  runs: HoldingRun[];
}

/** One replica's part of the index. */
export interface ReplicaIndexView {
  routes: number;
  /** The replica's route budget, or null when unbounded. */
  budget: number | null;
  /** The replica's horizon in ms, or null when only the TTL applies. */
  horizonMs: number | null;
  /** Learn time of the replica's least recently used route, or null when it has none. */
  oldestLearnedAt: number | null;
}

/** LOCAL block keys, most recently used first; what one LB shares with its peers. */
export type PrefixSnapshot = BlockKey[];

export interface RouteInfo {
  replicaId: string;
  /** When the route was last learned: its recency and its age (every touch re-learns it). */
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
  /** Routes evicted for capacity (global, per block, or a replica's budget). */
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
