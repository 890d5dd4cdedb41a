import type { CrossRegionMode, PolicyName } from "@meridian/routing";

// Kept as a literal list (type-checked against the routing package) so the client bundle does not pull
// in the routing implementation just to render a <select>.
export const POLICY_OPTIONS = [
  "gorgo",
  "least-load",
  "least-request",
  "prefix-cache",
  "session-affinity",
  "consistent-hash",
  "round-robin",
  "random",
  "skylb",
  "learned-prefix",
] as const satisfies readonly PolicyName[];

export const CROSS_REGION_OPTIONS = ["direct", "via-peer"] as const satisfies readonly CrossRegionMode[];
export type CrossRegion = (typeof CROSS_REGION_OPTIONS)[number];

/** The simulator also runs "gorgo-online": gorgo with the online tuner stepping in virtual time. */
export const EXPERIMENT_POLICY_OPTIONS = [...POLICY_OPTIONS, "gorgo-online"] as const;
export type ExperimentPolicy = (typeof EXPERIMENT_POLICY_OPTIONS)[number];
export type Policy = (typeof POLICY_OPTIONS)[number];
