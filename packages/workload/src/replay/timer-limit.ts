// Node timers hold at most 2^31 − 1 ms: a longer delay is silently shortened to 1 ms (a "no
// timeout" value would time every request out at once; a refresh interval would become a fetch
// storm). Every delay the replay takes from its user is checked against this one limit.

/** The longest delay a Node timer holds (2^31 − 1 ms, ~24.8 days). */
export const MAX_TIMER_MS = 2_147_483_647;

/** Throws a RangeError naming `option` unless `ms` is a positive delay a Node timer can hold. */
export function assertTimerMs(option: string, ms: number): void {
  if (!(ms > 0 && ms <= MAX_TIMER_MS))
    throw new RangeError(`${option} must be > 0 and at most ${MAX_TIMER_MS} ms (the longest delay a Node timer holds), got ${ms}`);
}
