// The simulator's comparison summary as the experiments page reads it. The server stores it as the
// simulator printed it and types it `unknown`, so the page checks the shape before trusting it.

export interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
}

export interface PolicySummary {
  name: string;
  requests: number;
  completed: number;
  ttft_ms: Percentiles;
  e2e_ms: Percentiles;
  itl_ms_p50: number | null;
  throughput_rps: number;
  cache_hit_rate: number | null;
  replica_share: Record<string, number>;
  max_share: number;
}

export interface ExperimentResult {
  policies: PolicySummary[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;

function isPolicySummary(v: unknown): v is PolicySummary {
  return isObject(v) && typeof v.name === "string" && isObject(v.ttft_ms) && isObject(v.e2e_ms);
}

/** Null when the stored result is not a comparison summary (a newer or failed format). */
export function asExperimentResult(value: unknown): ExperimentResult | null {
  if (!isObject(value) || !Array.isArray(value.policies)) return null;
  return value.policies.every(isPolicySummary) ? (value as unknown as ExperimentResult) : null;
}
