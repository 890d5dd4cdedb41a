// `meridian-sim grid`: the landscape of (W_rtt, W_queue) on one workload. Each point is a full run
// of gorgo with those weights on every LB; the optimum is the point with the lowest p95 TTFT, and the
// defaults' distance from it is given both as a latency ratio and in log-weight space (the space the
// tuner searches).

import { DEFAULT_WEIGHTS, WEIGHT_BOUNDS, type Weights } from "@meridian/routing";
import type { WeightBounds } from "@meridian/tuner";
import { simulateFleetOverSeeds } from "./simulator";
import type { FleetSpec } from "./spec";
import { roundOrNull } from "./stats";
import type { GridJson, GridPoint, IndexMode } from "./result-json";
import type { SimRequest } from "./workload";

/** `points` values log-spaced over [lo, hi], both ends included. */
export function logSpaced(lo: number, hi: number, points: number): number[] {
  if (!(lo > 0) || !(hi >= lo)) throw new Error(`log spacing needs 0 < lo <= hi, got [${lo}, ${hi}]`);
  if (points === 1 || lo === hi) return [lo];
  // ln(hi) − ln(lo), not ln(hi / lo): the ratio of bounds far apart overflows to Infinity, and
  // 0 × Infinity made the first weight NaN.
  const [logLo, logHi] = [Math.log(lo), Math.log(hi)];
  return Array.from({ length: points }, (_, i) => (i === 0 ? lo : i === points - 1 ? hi : Math.exp(logLo + (i / (points - 1)) * (logHi - logLo))));
}

/** No point of a grid has a p95 TTFT (each refused more than 5 % of its requests): none is the optimum. */
export class NoOptimumError extends Error {
  override readonly name = "NoOptimumError";
}

/** A weight as the JSON reports it: six decimals, or six significant digits below 0.001, where six
 * decimals would merge nearby points and report a weight of 0 (bounds such as [1e-7, 9e-7]). */
function reported(weight: number): number {
  return weight >= 1e-3 ? (roundOrNull(weight, 6) ?? weight) : Number(weight.toPrecision(6));
}

function point(spec: FleetSpec, requests: readonly SimRequest[], seeds: readonly number[], weights: Weights, index: IndexMode | undefined): GridPoint {
  const s = simulateFleetOverSeeds(spec, requests, { policy: "gorgo", weights, ...(index ? { index } : {}) }, seeds);
  return {
    rtt: reported(weights.rtt),
    queue: reported(weights.queue),
    // A refused request counts as slower than any served one: no point wins by refusing.
    ttft_ms: { p50: roundOrNull(s.ttft_ms.p50, 1), p95: roundOrNull(s.ttft_p95_offered_ms, 1) },
    e2e_p95_ms: roundOrNull(s.e2e_ms.p95, 1),
    refused: s.failed,
    max_share: roundOrNull(s.max_share, 4) ?? 0,
  };
}

export interface GridOptions {
  bounds?: WeightBounds;
  pointsPerAxis?: number;
  defaults?: Weights;
  /** Run every point under each of these seeds and judge it on their requests pooled (default: `seed` alone). */
  seeds?: readonly number[];
  /** How the LBs know what the engines cache (default `learned`). */
  index?: IndexMode;
  onProgress?: (done: number, total: number, label: string) => void;
}

export function grid(spec: FleetSpec, requests: readonly SimRequest[], seed: number, options: GridOptions = {}): GridJson {
  const bounds = options.bounds ?? WEIGHT_BOUNDS;
  const n = options.pointsPerAxis ?? 9;
  const defaultsWeights = options.defaults ?? { ...DEFAULT_WEIGHTS };
  const rtts = logSpaced(bounds.rtt[0], bounds.rtt[1], n);
  const queues = logSpaced(bounds.queue[0], bounds.queue[1], n);
  const seeds = options.seeds ?? [seed];
  const total = rtts.length * queues.length + 1;
  const points: GridPoint[] = [];
  for (const rtt of rtts) {
    for (const queue of queues) {
      points.push(point(spec, requests, seeds, { rtt, queue }, options.index));
      options.onProgress?.(points.length, total, `rtt=${rtt.toPrecision(3)},queue=${queue.toPrecision(3)}`);
    }
  }
  const defaults = point(spec, requests, seeds, defaultsWeights, options.index);
  options.onProgress?.(total, total, "defaults");
  const p95 = (p: GridPoint) => p.ttft_ms.p95 ?? Infinity;
  // Naming the first point the optimum when none has a p95 would ring an arbitrary point.
  if (![...points, defaults].some((p) => Number.isFinite(p95(p)))) {
    throw new NoOptimumError(
      `no point of the grid has a p95 TTFT: each refused more than 5% of its ${requests.length} requests, so none is the optimum; try a lighter load (a larger time scale) or a larger fleet`,
    );
  }
  const optimum = [...points, defaults].reduce((best, p) => (p95(p) < p95(best) ? p : best));
  const ratio = p95(optimum) > 0 && Number.isFinite(p95(defaults)) ? p95(defaults) / p95(optimum) : null;
  return {
    preset: spec.name,
    seed,
    ...(options.seeds ? { seeds: [...seeds] } : {}),
    // Only when it is not the default, so a learned-index grid reads as it always has.
    ...(options.index !== undefined && options.index !== "learned" ? { index: options.index } : {}),
    requests: requests.length,
    points_per_axis: n,
    bounds,
    points,
    optimum,
    defaults: {
      ...defaults,
      p95_ratio_to_optimum: roundOrNull(ratio ?? NaN, 4),
      // null, not 0, when a weight of 0 (the reward hack) puts the defaults at no finite distance.
      log_distance_to_optimum: roundOrNull(Math.hypot(Math.log(defaults.rtt / optimum.rtt), Math.log(defaults.queue / optimum.queue)), 4),
    },
  };
}
