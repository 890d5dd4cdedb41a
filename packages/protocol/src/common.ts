import { z } from "zod";
import {
  CAPACITY_SOURCES,
  CROSS_REGION_MODES,
  ENGINE_KINDS,
  INDEX_CLEAR_REASONS,
  MAX_COST_WEIGHT,
  POLICY_NAMES,
  REPLICA_STATES,
  TRIAL_ARMS,
} from "@meridian/routing/types";

// Field builders shared by the wire schemas. zod 4's z.number() already rejects NaN and ±Infinity.

export const nonEmptyString = z.string().min(1, { error: "must not be empty" });
/** An LB's, replica's or peer's id, or a region's name: the proxy sends them in HTTP headers
 * (x-meridian-lb, x-meridian-replica, x-meridian-src-region), which carry only visible ASCII. A
 * config with "レプリカ-1" validated and then answered every request 502. */
export const headerSafeId = z
  .string()
  .min(1, { error: "must not be empty", abort: true })
  .regex(/^[\x21-\x7e]+$/, {
    error: "must be visible ASCII without spaces (it is sent in HTTP headers), e.g. us-ashburn-1",
  });
export const count = z.int().nonnegative();
export const positiveInt = z.int().positive();
/** The longest delay a Node timer holds (2^31 - 1 ms, about 24.8 days). setTimeout and setInterval
 * fire a longer one after 1 ms (TimeoutOverflowWarning), and undici's timeouts run on the same
 * timers: a huge value meant as "practically never" would do the opposite. */
export const MAX_TIMER_MS = 2_147_483_647;
const timerBound = { error: `must be at most ${MAX_TIMER_MS} ms (2^31 - 1, about 24.8 days): Node timers fire a longer delay after 1 ms` };
/** A timeout or an interval that runs on a timer, in ms: a positive integer a Node timer can hold. */
export const durationMs = positiveInt.max(MAX_TIMER_MS, timerBound);
/** The same where 0 is meaningful (no wait). */
export const durationMsOrZero = count.max(MAX_TIMER_MS, timerBound);
export const nonNegativeNumber = z.number().nonnegative();
/** Milliseconds on the sender's clock (wall clock live, virtual clock in the simulator: may be fractional). */
export const timeMs = z.number().nonnegative();
export const fraction = z.number().min(0).max(1);
/** Chained block key: an unsigned integer below 2^53 (see routing's BlockKey). */
export const blockKey = z.int().nonnegative();

export const httpUrl = z.url({ protocol: /^https?$/, error: "expected an http or https URL" });

export const policyName = z.enum(POLICY_NAMES);
export const crossRegionMode = z.enum(CROSS_REGION_MODES);
export const replicaState = z.enum(REPLICA_STATES);
export const engineKind = z.enum(ENGINE_KINDS);
export const capacitySource = z.enum(CAPACITY_SOURCES);
export const indexClearReason = z.enum(INDEX_CLEAR_REASONS);
export const trialArm = z.enum(TRIAL_ARMS);

/** One cost weight: positive, and at most MAX_COST_WEIGHT (1e6) so that every score stays finite
 * (routing's types.ts says why). Far above the tuner's search bounds, which are the tuner's business:
 * an operator may set weights by hand beyond them. */
const costWeight = z
  .number()
  .positive()
  .max(MAX_COST_WEIGHT, { error: `must be at most ${MAX_COST_WEIGHT} (a larger weight can overflow a routing score)` });

/** Cost weights as carried on the wire. */
export const weights = z.strictObject({
  rtt: costWeight,
  queue: costWeight,
});

/** Cost weights as an LB reports them (state, telemetry): unknown keys are dropped, as in every
 * object an LB writes, so a newer LB's extra field never costs an older console the whole object. */
export const reportedWeights = z.object(weights.shape);

/**
 * A tuner trial as an LB applies it (packages/tuner/README.md): sessions whose salted hash puts them in
 * the candidate arm (share of them) are routed with `candidate`, the rest with the config's weights.
 * Strict, so an LB that does not know trials refuses such a config instead of silently ignoring it.
 */
export const trial = z.strictObject({
  /** Telemetry events carry it back; the tuner counts only samples of its current trial. */
  id: nonEmptyString.max(64),
  salt: nonEmptyString.max(64),
  share: z.number().gt(0, { error: "must be > 0" }).lt(1, { error: "must be < 1" }),
  candidate: weights,
});
