/** Thrown for input a routing function cannot decide on safely (bad weights, no candidates, NaN
 * token counts, ...). `field` names the offending input so callers can map it to a 400 or a log line
 * instead of silently routing somewhere arbitrary. */
export class RoutingInputError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.name = "RoutingInputError";
    this.field = field;
  }
}

/** Score given to candidates a policy must not pick (unhealthy, ineligible). Finite on purpose:
 * Infinity turns into null in JSON telemetry. */
export const EXCLUDED_SCORE = Number.MAX_SAFE_INTEGER;

export function requireFiniteNumber(field: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new RoutingInputError(field, `must be a finite number, got ${describe(value)}`);
  }
  return value;
}

export function requireNonNegative(field: string, value: unknown): number {
  const n = requireFiniteNumber(field, value);
  if (n < 0) throw new RoutingInputError(field, `must be >= 0, got ${n}`);
  return n;
}

export function requirePositiveInteger(field: string, value: unknown): number {
  const n = requireFiniteNumber(field, value);
  if (!Number.isInteger(n) || n <= 0) throw new RoutingInputError(field, `must be a positive integer, got ${n}`);
  return n;
}

export function describe(value: unknown): string {
  if (typeof value === "number") return String(value);
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value;
}
