// Width of a request body, checked before JSON.parse sees it. Depth is json-depth.ts's; width costs
// too: JSON.parse builds an object of 700k keys from 8 MiB in about 1 s (an array of 4M zeros in 0.3 s)
// on the LB's one event loop, against 13 ms for 8 MiB of prompt text, and every other client waits.
// No OpenAI request needs that many values: a chat of thousands of messages has a few members each.
//
// The check runs on the bodies json-depth.ts prescans (PRESCAN_MIN_BYTES and up): first a native count
// of ":" and "," bytes, in strings or not (an upper bound, enough for most bodies); only when that
// bound is over a limit, the byte-by-byte scan of json-depth.ts that skips strings.
import { countBytesUpTo, forEachByteOutsideStrings } from "./json-depth";

/** Object members a body may hold (":" outside strings): a parse of this many costs some 70 ms. */
export const MAX_JSON_MEMBERS = 50_000;
/** Values separated by commas a body may hold (array elements and members). */
export const MAX_JSON_VALUES = 1_000_000;

const COLON = 0x3a;
const COMMA = 0x2c;

/** What makes raw JSON too wide to parse, or null. Only worth calling on large bodies. */
export function rawTooWide(parts: readonly Buffer[]): string | null {
  if (countBytesUpTo(parts, [COLON], MAX_JSON_MEMBERS) <= MAX_JSON_MEMBERS && countBytesUpTo(parts, [COMMA], MAX_JSON_VALUES) <= MAX_JSON_VALUES) return null;
  let members = 0;
  let values = 0;
  let found: string | null = null;
  forEachByteOutsideStrings(parts, (byte) => {
    if (byte === COLON && ++members > MAX_JSON_MEMBERS) found = `more than ${MAX_JSON_MEMBERS} object members`;
    else if (byte === COMMA && ++values > MAX_JSON_VALUES) found = `more than ${MAX_JSON_VALUES} values`;
    return found !== null;
  });
  return found;
}
