// Nesting depth of a request body, checked at a cost the hot path can afford. JSON.parse itself copes
// with any depth, but what comes after does not: JSON.stringify and recursive validators (an engine's
// among them) overflow the stack on arrays nested 100k deep. And a deeply nested body is costly to
// parse at all: 8 MiB of "[" takes JSON.parse about 2 s and 350 MB, against 9 ms for 8 MiB of text.
//
// So there are two checks. After parsing, a walk of the parsed value (strings are leaves, so an 80 KB
// prompt is a handful of nodes: about 1.5 µs). Before parsing, only for bodies too large for the cost
// of parsing a nesting bomb to be acceptable, a scan of the raw bytes: first a count of "[" and "{"
// with Buffer.indexOf (native, fast when there are few), and only when that count exceeds the limit,
// a byte-by-byte scan that skips strings. Below PRESCAN_MIN_BYTES a body cannot nest deeper than
// half its size (128k levels, ~40 ms to parse), which is bounded; scanning every body instead would
// add as much again as parsing costs.

/** Bodies at least this large have their depth checked before JSON.parse sees them. */
export const PRESCAN_MIN_BYTES = 256 * 1024;

const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Whether a parsed JSON value nests arrays and objects more than `maxDepth` deep (the top level is
 * depth 1). Iterative, so no input can overflow the stack. */
export function valueNestsDeeperThan(value: unknown, maxDepth: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  const stack: unknown[] = [value];
  const depths: number[] = [1];
  while (stack.length > 0) {
    const node = stack.pop() as object;
    const depth = depths.pop() as number;
    if (depth > maxDepth) return true;
    const children: unknown[] = Array.isArray(node) ? node : Object.values(node);
    for (let i = 0; i < children.length; i++) {
      const child = children[i];
      if (typeof child === "object" && child !== null) {
        stack.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** Whether raw JSON bytes (in parts, as read from the socket) open more than `maxDepth` arrays or
 * objects at once, without parsing them. Only worth calling on large bodies (PRESCAN_MIN_BYTES). */
export function rawNestsDeeperThan(parts: readonly Buffer[], maxDepth: number): boolean {
  // "[" and "{" bytes bound the depth from above.
  if (countBytesUpTo(parts, [OPEN_ARRAY, OPEN_OBJECT], maxDepth) <= maxDepth) return false;
  let depth = 0;
  let deeper = false;
  forEachByteOutsideStrings(parts, (byte) => {
    if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) deeper = ++depth > maxDepth;
    else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) depth--;
    return deeper;
  });
  return deeper;
}

/**
 * Calls `visit` with every byte of raw JSON that is outside a string (quotes included, escapes
 * handled across part boundaries), until it returns true. The one scanner of the raw prescans (this
 * file's depth, json-width.ts's width).
 */
export function forEachByteOutsideStrings(parts: readonly Buffer[], visit: (byte: number) => boolean): void {
  let inString = false;
  let escaped = false;
  for (const part of parts) {
    for (let i = 0; i < part.length; i++) {
      const byte = part[i] as number;
      if (inString) {
        if (escaped) escaped = false;
        else if (byte === BACKSLASH) escaped = true;
        else if (byte === QUOTE) inString = false;
        continue;
      }
      if (byte === QUOTE) inString = true;
      if (visit(byte)) return;
    }
  }
}

/** Bytes equal to any of `bytes`, in strings or not, counted with Buffer.indexOf up to just past
 * `cap`: a cheap upper bound that spares most bodies the scan above. */
export function countBytesUpTo(parts: readonly Buffer[], bytes: readonly number[], cap: number): number {
  let count = 0;
  for (const part of parts) {
    for (const byte of bytes) {
      for (let at = part.indexOf(byte); at !== -1; at = part.indexOf(byte, at + 1)) {
        if (++count > cap) return count;
      }
    }
  }
  return count;
}
