// Argument checks of the prefix index's public methods: malformed keys, ids or trust levels throw a
// RoutingInputError naming the field, before anything is stored.
import { RoutingInputError, describe } from "./errors";
import { LOCAL, REMOTE } from "./route-pool";
import type { BlockKey } from "./types";

const MAX_BLOCK_KEY = Number.MAX_SAFE_INTEGER;

export function checkKeys(field: string, keys: readonly BlockKey[]): void {
  if (!Array.isArray(keys)) throw new RoutingInputError(field, `must be an array of block keys, got ${describe(keys)}`);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as number;
    // Fast path first: a valid key is an integer in [0, 2^53).
    if (!(k >= 0 && k <= MAX_BLOCK_KEY && Math.floor(k) === k)) {
      throw new RoutingInputError(`${field}[${i}]`, `must be an unsigned integer block key < 2^53, got ${describe(k)}`);
    }
  }
}

export function checkTrust(trust: unknown): number {
  if (trust === "LOCAL") return LOCAL;
  if (trust === "REMOTE") return REMOTE;
  throw new RoutingInputError("trust", `must be "LOCAL" or "REMOTE", got ${describe(trust)}`);
}

export function checkReplicaId(field: string, id: unknown): string {
  if (typeof id !== "string" || id.length === 0) throw new RoutingInputError(field, `must be a non-empty string, got ${describe(id)}`);
  return id;
}
