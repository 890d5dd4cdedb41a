// Argument checks of the prefix index: malformed options, keys, ids or trust levels throw a
// RoutingInputError naming the field, before anything is stored.
import { RoutingInputError, describe } from "./errors";
import type { PrefixIndexOptions } from "./prefix-index-types";
import { type BlockKey, MAX_INDEX_CAPACITY_BLOCKS } from "./types";

const LOCAL = 0;
const REMOTE = 1;
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

export function checkOptions(options: PrefixIndexOptions): { capacity: number; ttl: number; perBlock: number } {
  if (options === null || typeof options !== "object") throw new RoutingInputError("options", "must be an object");
  const capacity = options.capacityBlocks;
  if (typeof capacity !== "number" || !Number.isInteger(capacity) || capacity <= 0 || capacity > MAX_INDEX_CAPACITY_BLOCKS) {
    throw new RoutingInputError("capacityBlocks", `must be a positive integer <= ${MAX_INDEX_CAPACITY_BLOCKS} (2^31 - 1), got ${describe(capacity)}`);
  }
  const ttl = options.ttlMs ?? 3_600_000;
  if (typeof ttl !== "number" || !(ttl > 0)) throw new RoutingInputError("ttlMs", `must be a positive number, got ${describe(ttl)}`);
  const perBlock = options.maxReplicasPerBlock ?? 64;
  if (typeof perBlock !== "number" || !Number.isInteger(perBlock) || perBlock <= 0) {
    throw new RoutingInputError("maxReplicasPerBlock", `must be a positive integer, got ${describe(perBlock)}`);
  }
  return { capacity, ttl, perBlock };
}
