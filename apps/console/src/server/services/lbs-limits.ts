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

/** `schema` (one of the protocol's config sections, every field defaulted) with every field optional
 * and no default filled in: what an operator sets, or what differs from the defaults. Strict, as
 * the LB's schema is: a misspelt field is refused rather than silently ignored. Shared with the
 * LB's routing settings (lbs-routing-settings.ts): one rule for every stored config section. */
export function fieldsSet<T extends object>(schema: { shape: Record<string, z.ZodDefault<z.ZodType>> }): z.ZodType<Partial<T>> {
  return z.strictObject(
    Object.fromEntries(Object.entries(schema.shape).map(([key, field]) => [key, field.removeDefault().optional()])),
  ) as unknown as z.ZodType<Partial<T>>;
}

/** LimitsSchema with every field optional: what an operator sets. */
export const limitsInput = fieldsSet<Limits>(LimitsSchema);

/** `value` parsed by `schema`, or a 400 naming each refused field under `field` ("limits.maxBodyBytes:
 * ..."), as the router's own validation names it. */
export function requireParsed<T>(schema: z.ZodType<T>, value: unknown, field: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw invalid(parsed.error.issues.map((issue) => `${[field, ...issue.path.map(String)].join(".")}: ${issue.message}`).join("; "));
  }
  return parsed.data;
}

/** The fields of `running` that differ from `defaults`: what adopting an LB's running settings
 * stores, so that the ones it ran at their defaults keep following the protocol's. */
export function differencesFrom<T extends object>(running: T, defaults: Readonly<T>): Partial<T> {
  return Object.fromEntries(Object.entries(running).filter(([key, value]) => value !== defaults[key as keyof T])) as Partial<T>;
}

/** The stored JSON (null: nothing stored) as the limits set; a stored value the schema refuses
 * throws, so a bad row fails the config build loudly instead of pushing the defaults. */
export function storedLimits(json: string | null): LimitsSet {
  return json === null ? {} : limitsInput.parse(JSON.parse(json));
}

/** The JSON the console stores for limits an operator gave, checked by the protocol's bounds (a
 * service called without the router, e.g. by the demo seed, is held to them too). Only the fields
 * given are stored: `{}` is "every limit at its default", set on purpose. */
export function requireLimits(limits: unknown): string {
  return limitsJson(requireParsed(limitsInput, limits, "limits"));
}

/** What the console stores for `limits`: only the fields given (undefined ones dropped). */
export function limitsJson(limits: LimitsSet): string {
  return JSON.stringify(Object.fromEntries(LIMIT_KEYS.filter((key) => limits[key] !== undefined).map((key) => [key, limits[key]])));
}

/** The limits of `running` that differ from the protocol's defaults. */
export function differencesFromDefaults(running: Limits): LimitsSet {
  return differencesFrom(running, DEFAULT_LIMITS);
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
