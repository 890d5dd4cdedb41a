// Deterministic, non-cryptographic hashing and seeded randomness for the workload package.
// Everything here must give the same result in every process and on every run: region
// assignment, prompt text and generated hash ids are compared across the live replay and the
// offline simulator.

/** A seeded random source. Structurally the same as `Rng` in @meridian/routing, declared here so
 * this package does not need the routing package's entry point to exist. */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a over the UTF-16 code units of `text`, continuing from `seed`. Unsigned 32-bit. */
function fnv1a32(text: string, seed: number = FNV_OFFSET): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  return h >>> 0;
}

/** Murmur3's 32-bit finaliser: FNV alone leaves the low bits poorly mixed for short inputs. */
function mix32(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A well-mixed unsigned 32-bit hash of a string. */
export function hash32(text: string): number {
  return mix32(fnv1a32(text));
}

/** A uniform number in [0, 1) derived from a string. */
export function hashUnit(text: string): number {
  return hash32(text) / 0x1_0000_0000;
}

/**
 * A 53-bit chained hash: hash53(prev, text) for prefix-chained block ids, so equal prefixes give
 * equal ids. Two independently seeded 32-bit lanes; the result is an exact JS integer < 2^53.
 */
export function hash53(text: string, prev = 0): number {
  const prevHi = Math.floor(prev / 0x1_0000_0000) >>> 0;
  const prevLo = prev >>> 0;
  const lo = mix32(fnv1a32(text, (FNV_OFFSET ^ prevLo ^ mix32(prevHi)) >>> 0));
  const hi = mix32(fnv1a32(text, (0x9e3779b9 ^ prevHi ^ mix32(prevLo + 1)) >>> 0)) & 0x1f_ffff;
  return hi * 0x1_0000_0000 + lo;
}

/** mulberry32: a small, fast seeded PRNG; good enough for synthetic text and arrival times. */
export function createRng(seed: number): Rng {
  let state = seed >>> 0;
  return {
    next(): number {
      state = (state + 0x6d2b79f5) >>> 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 0x1_0000_0000;
    },
  };
}

/** An integer uniform in [min, max] (inclusive). */
export function randomInt(rng: Rng, min: number, max: number): number {
  return min + Math.floor(rng.next() * (max - min + 1));
}

/** An exponential variate with the given mean (Poisson inter-arrival times). */
export function randomExponential(rng: Rng, mean: number): number {
  // 1 - next() is in (0, 1], so the log is finite.
  return -Math.log(1 - rng.next()) * mean;
}
