// Deterministic, non-cryptographic hashing shared by block keys, session keys and the hash ring.
// Two independent 32-bit multiplicative lanes run over UTF-16 code units, then a cross-lane
// avalanche produces a 53-bit unsigned integer: exact as a JS number, a cheap Map key, and
// identical in every process and in the browser (no node:crypto, no platform dependence).

import type { BlockKey } from "./types";

/** 2^32, used to split / join the two lanes of a 53-bit key. */
export const TWO_POW_32 = 4294967296;

// Odd multipliers (golden-ratio and murmur-family constants); any odd constant keeps each step a
// bijection of the lane state, so information is never lost before the final mix.
export const LANE1_MUL = 0x9e3779b1 | 0;
export const LANE2_MUL = 0x85ebca77 | 0;
const LANE1_SEED = 0x2545f491;
const LANE2_SEED = 0x6a09e667 | 0;

/** Seeds lane 1 from a previous 53-bit value (the chain link). */
export function seedLane1(prev: number): number {
  return ((prev >>> 0) ^ LANE1_SEED) | 0;
}

/** Seeds lane 2 from a previous 53-bit value (the chain link). */
export function seedLane2(prev: number): number {
  return (((prev / TWO_POW_32) >>> 0) ^ LANE2_SEED) | 0;
}

/** Cross-lane avalanche: every input bit of both lanes reaches every output bit. */
export function finalizeLanes(lane1: number, lane2: number): BlockKey {
  let a = lane1 ^ Math.imul(lane2 ^ (lane2 >>> 15), 0x2c1b3c6d);
  let b = lane2 ^ Math.imul(lane1 ^ (lane1 >>> 13), 0x297a2d39);
  a = Math.imul(a ^ (a >>> 16), 0x85ebca6b);
  a = Math.imul(a ^ (a >>> 13), 0xc2b2ae35);
  a ^= a >>> 16;
  b = Math.imul(b ^ (b >>> 16), 0x7feb352d);
  b = Math.imul(b ^ (b >>> 15), 0x846ca68b);
  b ^= b >>> 16;
  return (b & 0x1fffff) * TWO_POW_32 + (a >>> 0);
}

/** 53-bit hash of a string (UTF-16 code units). `seed` lets callers derive independent hashes. */
export function hashString(text: string, seed = 0): number {
  let h1 = seedLane1(seed);
  let h2 = seedLane2(seed);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x9e3779b1);
    h2 = Math.imul(h2 ^ c, 0x85ebca77);
  }
  // Mixing in the length separates "" from "\u0000" and similar degenerate cases.
  return finalizeLanes(h1 ^ text.length, h2);
}

/** 32-bit unsigned hash of a string, for ring positions and modulo picks. */
export function hashString32(text: string, seed = 0): number {
  return hashString(text, seed) % TWO_POW_32;
}
