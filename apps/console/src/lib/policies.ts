// The contract module only (constants and types, no implementation), so the client bundle does not
// pull in the routing code just to render a <select>.
import { POLICY_NAMES, type CrossRegionMode } from "@meridian/routing/types";

export const POLICY_OPTIONS = POLICY_NAMES;

export const CROSS_REGION_OPTIONS = ["direct", "via-peer"] as const satisfies readonly CrossRegionMode[];
export type CrossRegion = (typeof CROSS_REGION_OPTIONS)[number];

/** The simulator also runs "gorgo-online": gorgo with the online tuner stepping in virtual time. */
export const EXPERIMENT_POLICY_OPTIONS = [...POLICY_OPTIONS, "gorgo-online"] as const;
export type ExperimentPolicy = (typeof EXPERIMENT_POLICY_OPTIONS)[number];
export type Policy = (typeof POLICY_OPTIONS)[number];
