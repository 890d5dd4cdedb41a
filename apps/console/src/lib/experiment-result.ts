// The simulator's comparison summary as the experiments page reads it. The shapes are the simulator's
// own (`@meridian/sim/results`, types only); the server stores the result as the simulator printed it
// and types it `unknown`, so the page checks the shape before trusting it.
import type { CompareJson, ComparePolicyRow, GridJson } from "@meridian/sim/results";

export type PolicySummary = ComparePolicyRow;
export type ExperimentResult = Pick<CompareJson, "policies">;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;

function isPolicySummary(v: unknown): v is PolicySummary {
  return isObject(v) && typeof v.name === "string" && isObject(v.ttft_ms) && isObject(v.e2e_ms);
}

/** Null when the stored result is not a comparison summary (a newer or failed format). */
export function asExperimentResult(value: unknown): ExperimentResult | null {
  if (!isObject(value) || !Array.isArray(value.policies)) return null;
  return value.policies.every(isPolicySummary) ? (value as unknown as ExperimentResult) : null;
}

export type GridResult = Pick<GridJson, "points" | "optimum" | "defaults" | "bounds" | "points_per_axis">;

/** Null when the stored result is not a `meridian-sim grid` landscape. */
export function asGridResult(value: unknown): GridResult | null {
  if (!isObject(value) || !Array.isArray(value.points) || !isObject(value.optimum) || !isObject(value.defaults)) return null;
  return value.points.every((p) => isObject(p) && typeof p.rtt === "number" && typeof p.queue === "number" && isObject(p.ttft_ms))
    ? (value as unknown as GridResult)
    : null;
}
