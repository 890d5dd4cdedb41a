// A replica's capacity settings the console pushes to the LBs (ReplicaConfig.maxConcurrency and
// cacheCapacityTokens): null = not set, and the LB learns the value from the engine. The bounds are
// the protocol's own (ReplicaConfigSchema), so the console stores only what every LB accepts.
import "server-only";
import { ReplicaConfigSchema } from "@meridian/protocol";
import { invalid } from "../errors";

/** The console stores these in 32-bit INTEGER columns (packages/db columns.ts, `int`); a larger value
 * would be refused by PostgreSQL at write time rather than with a message. */
const INT32_MAX = 2 ** 31 - 1;
const storable = { error: `must be at most ${INT32_MAX}` };

export const replicaCapacityInput = {
  maxConcurrency: ReplicaConfigSchema.shape.maxConcurrency.unwrap().max(INT32_MAX, storable).nullable(),
  cacheCapacityTokens: ReplicaConfigSchema.shape.cacheCapacityTokens.unwrap().max(INT32_MAX, storable).nullable(),
};

export interface ReplicaCapacity {
  maxConcurrency: number | null;
  cacheCapacityTokens: number | null;
}

/** The given fields (undefined: unchanged), checked as the router checks them: a service called
 * without the router (the demo seed, tests) is held to the same bounds. */
export function requireCapacity(input: Partial<ReplicaCapacity>): Partial<ReplicaCapacity> {
  const out: Partial<ReplicaCapacity> = {};
  for (const key of ["maxConcurrency", "cacheCapacityTokens"] as const) {
    if (input[key] === undefined) continue;
    const parsed = replicaCapacityInput[key].safeParse(input[key]);
    if (!parsed.success) throw invalid(`${key}: ${parsed.error.issues.map((issue) => issue.message).join("; ")}`);
    out[key] = parsed.data;
  }
  return out;
}
