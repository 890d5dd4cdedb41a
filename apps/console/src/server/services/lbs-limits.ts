// An LB's request limits as the console stores them: only the fields an operator set (or the console
// adopted from the LB), as JSON on load_balancers.limits_json. A field left out is the protocol's
// default (DEFAULT_LIMITS), so a default the protocol changes reaches every LB that never set it.
// The bounds are the protocol's own (LimitsSchema): the console accepts exactly what an LB accepts.
import "server-only";
import { z } from "zod";
import { DEFAULT_LIMITS, type Limits, LimitsSchema } from "@meridian/protocol";
import { invalid } from "../errors";

export type LimitKey = keyof Limits;
export type LimitsSet = Partial<Limits>;

const LIMIT_KEYS = Object.keys(DEFAULT_LIMITS) as LimitKey[];

/** LimitsSchema with every field optional and no default filled in: what an operator sets. Strict,
 * as the LB's schema is: a misspelt limit is refused rather than silently ignored. */
export const limitsInput = z.strictObject(
  Object.fromEntries(LIMIT_KEYS.map((key) => [key, LimitsSchema.shape[key].removeDefault().optional()])) as {
    [K in LimitKey]: z.ZodOptional<ReturnType<(typeof LimitsSchema.shape)[K]["removeDefault"]>>;
  },
) as unknown as z.ZodType<LimitsSet>;

/** The stored JSON (null: nothing stored) as the limits set; a stored value the schema refuses
 * throws, so a bad row fails the config build loudly instead of pushing the defaults. */
export function storedLimits(json: string | null): LimitsSet {
  return json === null ? {} : limitsInput.parse(JSON.parse(json));
}

/** The JSON the console stores for limits an operator gave, checked by the protocol's bounds (a
 * service called without the router, e.g. by the demo seed, is held to them too). Only the fields
 * given are stored: `{}` is "every limit at its default", set on purpose. */
export function requireLimits(limits: unknown): string {
  const parsed = limitsInput.safeParse(limits);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `limits${issue.path.map((p) => `.${String(p)}`).join("")}: ${issue.message}`);
    throw invalid(issues.join("; "));
  }
  return limitsJson(parsed.data);
}

/** What the console stores for `limits`: only the fields given (undefined ones dropped). */
export function limitsJson(limits: LimitsSet): string {
  return JSON.stringify(Object.fromEntries(LIMIT_KEYS.filter((key) => limits[key] !== undefined).map((key) => [key, limits[key]])));
}

/** The fields of `running` that differ from the protocol's defaults: what adopting an LB's running
 * limits stores, so that the limits it ran at their defaults keep following the protocol's. */
export function differencesFromDefaults(running: Limits): LimitsSet {
  return Object.fromEntries(LIMIT_KEYS.filter((key) => running[key] !== DEFAULT_LIMITS[key]).map((key) => [key, running[key]])) as LimitsSet;
}

export interface LimitsView {
  /** The fields stored for the LB (the rest are defaults). */
  set: LimitsSet;
  /** False while the console stores nothing (neither set nor adopted yet): see lb-settings-adoption.ts. */
  stored: boolean;
  /** The protocol's defaults, which the fields not set take (the page shows them as such). */
  defaults: Limits;
}

export function limitsView(json: string | null): LimitsView {
  return { set: storedLimits(json), stored: json !== null, defaults: { ...DEFAULT_LIMITS } };
}
