// Input schemas shared by the routers. Messages are written for the UI.
import "server-only";
import { z } from "zod";
import { CROSS_REGION_MODES, ENGINE_KINDS, MAX_COST_WEIGHT, POLICY_NAMES, REPLICA_STATES } from "@meridian/routing/types";
import { COMPARE_POLICY_NAMES } from "@meridian/sim/results";

export const idInput = z.object({ id: z.string().trim().min(1, { error: "id is required" }) });
export const lbIdInput = z.object({ lbId: z.string().trim().min(1, { error: "lbId is required" }) });

const tunerTargetShape = {
  lbId: lbIdInput.shape.lbId.optional(),
  fleet: z.literal(true, { error: "fleet must be true" }).optional(),
};

function namesOneTuner(t: { lbId?: unknown; fleet?: unknown }): boolean {
  return (t.lbId === undefined) !== (t.fleet === undefined);
}

/** A tuner, an LB's ({ lbId }) or the fleet's ({ fleet: true }), with `fields` beside it. */
export function tunerTarget<T extends z.ZodRawShape>(fields: T) {
  return z.object({ ...tunerTargetShape, ...fields }).refine(namesOneTuner, { error: "name one tuner: lbId, or fleet: true" });
}

export const name = z
  .string()
  .trim()
  .min(1, { error: "name must not be empty" })
  .max(64, { error: "name must be at most 64 characters" })
  // A newline or another control character in a name breaks log lines, the audit and the pickers.
  .regex(/^\P{Cc}*$/u, { error: "name must not contain control characters (newlines, tabs)" });

export const regionName = z
  .string()
  .trim()
  .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, { error: "region names use lowercase letters, digits and dashes (e.g. us-ashburn)" });

/** Shape only; services check the scheme and say so clearly. Bounded: every LB config carries the
 * URLs of its replicas and peers, and an LB refuses a config body over 4 MiB, so one huge URL would
 * stop the pushes to every LB (2,048 characters is what browsers and proxies commonly allow). */
export const url = z.string().trim().min(1, { error: "url must not be empty" }).max(2048, { error: "url must be at most 2,048 characters" });

export const replicaState = z.enum(REPLICA_STATES);
export const engineKind = z.enum(ENGINE_KINDS, { error: `engine must be one of ${ENGINE_KINDS.join(", ")}` });
export const policyName = z.enum(POLICY_NAMES, { error: `policy must be one of ${POLICY_NAMES.join(", ")}` });
/** The simulator also offers "gorgo-online" (gorgo with the online tuner). */
const EXPERIMENT_POLICIES = COMPARE_POLICY_NAMES;
export const experimentPolicy = z.enum(EXPERIMENT_POLICIES, { error: `policies must be among ${EXPERIMENT_POLICIES.join(", ")}` });
export const crossRegion = z.enum(CROSS_REGION_MODES, { error: `crossRegion must be one of ${CROSS_REGION_MODES.join(", ")}` });

// At most what every LB accepts (protocol's weights): a larger weight could overflow a routing score.
const weight = z
  .number()
  .positive({ error: "weights must be positive numbers" })
  .max(MAX_COST_WEIGHT, { error: `weights must be at most ${MAX_COST_WEIGHT}` });
export const weights = z.object({ rtt: weight, queue: weight });

const boundPair = z.tuple([weight, weight]).refine(([lo, hi]) => lo <= hi, { error: "lower bound must not exceed the upper bound" });
export const bounds = z.object({ rtt: boundPair, queue: boundPair });

// 0 is a strict but meaningful e2eRatio (no E2E regression at all) and maxErrorRate (no failed
// request); not a maxShare: some replica takes a share > 0 of any traffic, so every measurement,
// the incumbent's included, would break a cap of 0 (packages/tuner/src/guardrails.ts).
export const guardrails = z.object({
  enabled: z.boolean(),
  e2eRatio: z.number().min(0, { error: "e2eRatio must be ≥ 0" }),
  maxShare: z
    .number()
    .gt(0, { error: "maxShare must be within (0, 1]: every measurement breaks a share cap of 0" })
    .max(1, { error: "maxShare must be within (0, 1]" }),
  maxErrorRate: z.number().min(0).max(1, { error: "maxErrorRate must be within [0, 1]" }),
});
