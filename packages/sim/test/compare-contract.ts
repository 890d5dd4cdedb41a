// The fields of a compare run's policy row that the console's experiments page reads (the --json
// contract, ComparePolicyRow in src/fleet/result-json.ts), asserted alike in-process and over the CLI.
import assert from "node:assert/strict";

const COMPARE_POLICY_FIELDS = [
  "name",
  "requests",
  "completed",
  "ttft_ms",
  "e2e_ms",
  "itl_ms_p50",
  "throughput_rps",
  "cache_hit_rate",
  "replica_share",
  "max_share",
] as const;

/** Fails naming the first contract field the policy row lacks. */
export function assertCompareContractFields(row: object): void {
  for (const field of COMPARE_POLICY_FIELDS) assert.ok(field in row, `missing ${field}`);
}
