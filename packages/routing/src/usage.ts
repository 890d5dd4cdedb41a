// What an engine's usage report may say. Engines are outside the LB's trust: a count that is not a
// whole number of tokens between 0 and MAX_USAGE_TOKENS is no report at all, for the cache feedback,
// the index's accuracy and the telemetry alike. (A fractional count, or a finite 1e308, used to reach
// a telemetry event the LB's own wire schema refuses, so the console dropped the request; and one
// 1e308 turned the LB's token counters into Infinity for its lifetime.)

/** More tokens than any one request holds (2^32): a count beyond is an engine's error. */
export const MAX_USAGE_TOKENS = 2 ** 32;

/** A usage count an engine may legitimately send (an integer in [0, MAX_USAGE_TOKENS]), else null. */
export function usageNumber(value: unknown): number | null {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= MAX_USAGE_TOKENS ? value : null;
}
