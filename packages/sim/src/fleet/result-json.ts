// The JSON shapes `meridian-sim compare | tune | sweep --json` print, and the policy names they
// accept. Types and constants only (no simulator code), exported as `@meridian/sim/results`, so the
// console's pages read the simulator's output through these declarations instead of copies.

import { POLICY_NAMES, type Weights } from "@meridian/routing/types";

/** `gorgo-online` is gorgo with the (1+1)-ES tuning its weights while it routes. */
export const ONLINE_GORGO = "gorgo-online";
/** Every name `compare`, `sweep` and the console's experiments accept. */
export const COMPARE_POLICY_NAMES = [...POLICY_NAMES, ONLINE_GORGO] as const;
export type ComparePolicyName = (typeof COMPARE_POLICY_NAMES)[number];

/** How the LBs know what the engines cache (`meridian-sim --index`):
 *  - `learned` (default): each LB's prefix index, sized from the engines' KV capacity and corrected
 *    by their cached-token reports (the live LB's index);
 *  - `static`: the index with its TTL and global capacity only, as it was before it learned;
 *  - `oracle`: every LB reads the engines' true cache state at dispatch, which no live LB can. It is
 *    the upper bound the other two are measured against. */
export const INDEX_MODES = ["learned", "static", "oracle"] as const;
export type IndexMode = (typeof INDEX_MODES)[number];

/** Percentiles as printed: null when the run completed no request. */
export interface PercentilesJson {
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

export interface ComparePolicyRow {
  name: string;
  requests: number;
  /** Requests answered 2xx; the rest were refused by an LB (`failed`). */
  completed: number;
  /** Requests an LB refused (503 queue full or wait exceeded, no replica): see `failed_by_code`. */
  failed: number;
  failed_by_code: Record<string, number>;
  ttft_ms: PercentilesJson;
  e2e_ms: PercentilesJson;
  itl_ms_p50: number | null;
  throughput_rps: number | null;
  input_tokens_per_s: number | null;
  cache_hit_rate: number | null;
  prediction_accuracy: number | null;
  replica_share: Record<string, number>;
  max_share: number;
  weights: Weights | null;
  tuner?: TunerJson;
  /** The same policy with `--index oracle` (compare adds it unless the run is the oracle). */
  oracle?: OracleJson;
}

/** A policy's run with every LB reading the engines' true caches, and the gap to it. */
export interface OracleJson {
  ttft_ms: PercentilesJson;
  cache_hit_rate: number | null;
  /** (this run's p95 TTFT − the oracle's) / the oracle's: 0.02 means 2 % slower than the oracle. */
  ttft_p95_gap: number | null;
}

export interface CompareJson {
  preset: string;
  seed: number;
  index: IndexMode;
  session_key: string;
  requests: number;
  dropped_too_long?: number;
  policies: ComparePolicyRow[];
}

export interface TrajectoryJson {
  step: number;
  at_ms: number;
  samples: number;
  kind: string;
  weights: Weights;
  p95_ttft_ms: number | null;
  e2e_p95_ms: number | null;
  max_share: number | null;
  accepted: boolean;
  guardrail: string;
  sigma: number | null;
  incumbent: Weights;
  converged: boolean;
  /** ab mode: how the trial ended and on what evidence. */
  trial?: {
    id: string;
    decision: string;
    reason: string;
    samples: { incumbent: number; candidate: number };
    triggered: { incumbent: number; candidate: number };
    p95_ttft_ms: { incumbent: number | null; candidate: number | null };
    p_better: number;
    alpha_at_look: number;
  };
}

export interface TunerJson {
  weights: Weights;
  initial_weights: Weights;
  samples_to_best: number;
  samples_seen: number;
  steps: number;
  converged: boolean;
  evaluation: string;
  guardrails: boolean;
  /** The LB this tuner tunes, or "fleet" (scope fleet), and the LBs it sets the weights of. */
  lb: string;
  lbs: string[];
  trajectory: TrajectoryJson[];
}

/** The first tuner's fields at the top level (one LB, or scope fleet), and every tuner in `tuners`. */
export interface TuneJson extends TunerJson {
  tuners: TunerJson[];
  preset: string;
  seed: number;
  requests: number;
  /** How the tuning run itself did (online, exploration included). */
  summary: ComparePolicyRow;
}

/**
 * Saturation, for the sweep (the paper's Table 3 "Saturated?"). A run is saturated when the fleet
 * could not keep up with the offered load, seen as any of:
 *  - p95 E2E above `e2eP95Ms` (default 15 s: about 3× what an unloaded paper fleet gives, since a
 *    p95-sized 40k-token prompt prefills in ~3 s and 128 tokens decode in ~1.5 s);
 *  - requests waiting for admission at ≥ `queuedScrapeFraction` (default 5 %) of some replica's
 *    metric scrapes (the engine's batch is full);
 *  - a backlog still draining `drainMs` (default 30 s) after the last arrival;
 *  - any request refused by an LB (its hold queue was full or the wait bound passed).
 */
export interface SaturationRule {
  e2eP95Ms: number;
  queuedScrapeFraction: number;
  drainMs: number;
}

export interface SweepRow {
  time_scale: number;
  policy: string;
  requests: number;
  failed: number;
  input_tokens_per_s: number | null;
  ttft_ms: PercentilesJson;
  e2e_ms: PercentilesJson;
  itl_ms_p50: number | null;
  cache_hit_rate: number | null;
  max_share: number;
  drain_ms: number | null;
  saturated: boolean;
  saturated_because: string[];
}

export interface SweepJson {
  preset: string;
  seed: number;
  /** Rows of the window dropped for a prompt over the fleet's maxInputTokens (the CLI adds it, as for compare). */
  dropped_too_long?: number;
  saturation_rule: SaturationRule;
  rows: SweepRow[];
}

/** `meridian-sim grid --json` (fleet/grid.ts). */
export interface GridPoint {
  rtt: number;
  queue: number;
  /** p50 over served requests; p95 over every offered request, a refused one counting as slowest (null: over 5 % refused). */
  ttft_ms: { p50: number | null; p95: number | null };
  /** Requests an LB refused at this point. */
  refused: number;
  e2e_p95_ms: number | null;
  max_share: number;
}

export interface GridJson {
  preset: string;
  seed: number;
  /** The seeds each point ran under, its requests pooled (GridOptions.seeds); absent: `seed` alone. */
  seeds?: number[];
  /** The index the LBs' policies read (`--index`); absent: `learned`, the default. */
  index?: IndexMode;
  requests: number;
  /** Points per axis, log-spaced over `bounds` (both ends included). */
  points_per_axis: number;
  bounds: { rtt: readonly [number, number]; queue: readonly [number, number] };
  points: GridPoint[];
  optimum: GridPoint;
  defaults: GridPoint & {
    /** Defaults' p95 TTFT / the optimum's. */
    p95_ratio_to_optimum: number | null;
    /** Euclidean distance to the optimum in (ln W_rtt, ln W_queue). */
    /** null when a default weight of 0 (the reward hack) leaves no finite log distance. */
    log_distance_to_optimum: number | null;
  };
}
