// Sub-seeds for one simulator run: policy tie-breaks (per LB), probe jitter and the tuner (per LB)
// each draw from their own stream, derived from the run's seed, so a run is deterministic per seed.

/**
 * Derives an independent sub-seed from a run seed and a salt. Only the seed's low 32 bits count
 * (`seed | 0`): seeds 0..2^32−1 (the CLI's range) are all distinct, larger ones alias smaller ones.
 */
export function mixSeed(seed: number, salt: number): number {
  let h = Math.imul((seed | 0) ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(salt, 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x27d4eb2f);
  h ^= h >>> 15;
  return h >>> 0;
}
