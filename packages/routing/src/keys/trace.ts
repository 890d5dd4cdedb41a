// The trace keyer: a trace row's hash ids (Mooncake integers, ART-Chat hex strings) as chained block
// keys, one per id; and the session key any keyer's chain yields.
import { RoutingInputError, describe } from "../errors";
import { LANE1_MUL, LANE2_MUL, TWO_POW_32, finalizeLanes, seedLane1, seedLane2 } from "../hash";
import type { BlockKey } from "../types";
import { CHAIN_ORIGIN } from "./stream";

/** Tokens one block key stands for in Mooncake traces. */
export const MOONCAKE_TOKENS_PER_BLOCK = 512;
/** Tokens one block key stands for in ART-Chat traces. */
export const ART_CHAT_TOKENS_PER_BLOCK = 256;

// Type tags keep the integer 5 and the string "5" apart.
const INT_ID_TAG = 0x1;
const HEX_ID_TAG = 0x2;

/**
 * Chained keys of a trace request: one key per hash id (Mooncake: safe integers, 512-token blocks;
 * ART-Chat: hex strings, 256-token blocks). key_k = hash(key_{k-1}, hashIds[k]).
 */
export function traceBlockKeys(hashIds: readonly (number | string)[]): BlockKey[] {
  if (!Array.isArray(hashIds)) throw new RoutingInputError("hashIds", `must be an array, got ${describe(hashIds)}`);
  const keys: BlockKey[] = new Array<BlockKey>(hashIds.length);
  let prev = CHAIN_ORIGIN;
  for (let k = 0; k < hashIds.length; k++) {
    const id = hashIds[k];
    let h1 = seedLane1(prev);
    let h2 = seedLane2(prev);
    if (typeof id === "number") {
      if (!Number.isSafeInteger(id) || id < 0) {
        throw new RoutingInputError(`hashIds[${k}]`, `must be a non-negative safe integer or a hex string, got ${describe(id)}`);
      }
      const words = [INT_ID_TAG, id % 0x10000, Math.floor(id / 0x10000) % 0x10000, Math.floor(id / TWO_POW_32) % 0x10000, Math.floor(id / 281474976710656)];
      for (const w of words) {
        h1 = Math.imul(h1 ^ w, LANE1_MUL);
        h2 = Math.imul(h2 ^ w, LANE2_MUL);
      }
    } else if (typeof id === "string" && id.length > 0) {
      h1 = Math.imul(h1 ^ HEX_ID_TAG, LANE1_MUL);
      h2 = Math.imul(h2 ^ HEX_ID_TAG, LANE2_MUL);
      for (let i = 0; i < id.length; i++) {
        // Hex ids are case-insensitive: fold A-F to a-f so "AB" and "ab" are the same block.
        let c = id.charCodeAt(i);
        if (c >= 65 && c <= 70) c += 32;
        h1 = Math.imul(h1 ^ c, LANE1_MUL);
        h2 = Math.imul(h2 ^ c, LANE2_MUL);
      }
      h1 ^= id.length;
    } else {
      throw new RoutingInputError(`hashIds[${k}]`, `must be a non-negative safe integer or a non-empty hex string, got ${describe(id)}`);
    }
    prev = finalizeLanes(h1, h2);
    keys[k] = prev;
  }
  return keys;
}

/**
 * Session key from the first `nBlocks` block keys, as a base-36 string. Because keys are chained,
 * key_{n-1} already hashes the first n blocks, so it IS the session hash. Uses fewer blocks when
 * the prompt has fewer; returns "" for a prompt with no full block (callers should then prefer an
 * explicit user / x-session-id). The key of a completion or embedding prompt; a chat is keyed by its
 * conversation instead (chatSessionKey, session.ts).
 */
export function sessionKeyFromBlocks(keys: readonly BlockKey[], nBlocks: number): string {
  if (!Number.isInteger(nBlocks) || nBlocks <= 0) {
    throw new RoutingInputError("nBlocks", `must be a positive integer, got ${describe(nBlocks)}`);
  }
  const n = Math.min(nBlocks, keys.length);
  if (n === 0) return "";
  return (keys[n - 1] as number).toString(36);
}
