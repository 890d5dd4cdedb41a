// The contract module only (constants and types, no implementation), so the client bundle does not
// pull in the routing code just to render a <select>.
import { CROSS_REGION_MODES, POLICY_NAMES } from "@meridian/routing/types";
import { COMPARE_POLICY_NAMES } from "@meridian/sim/results";

export const POLICY_OPTIONS = POLICY_NAMES;

export const CROSS_REGION_OPTIONS = CROSS_REGION_MODES;
export type CrossRegion = (typeof CROSS_REGION_OPTIONS)[number];

/** The simulator also runs "gorgo-online": gorgo with the online tuner stepping in virtual time. */
export const EXPERIMENT_POLICY_OPTIONS = COMPARE_POLICY_NAMES;
export type ExperimentPolicy = (typeof EXPERIMENT_POLICY_OPTIONS)[number];
export type Policy = (typeof POLICY_OPTIONS)[number];
