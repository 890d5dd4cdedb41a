// What an engine's usage report may say. Engines are outside the LB's trust: a count that is not a
// finite number >= 0 is no report at all, for the cache feedback, the index's accuracy and the
// telemetry alike.

/** A usage count an engine may legitimately send (finite and >= 0), else null. */
export function usageNumber(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : null;
}
