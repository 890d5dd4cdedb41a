// Seeded random numbers. The caller owns the seed, so simulator runs and tests are reproducible.

import { RoutingInputError, describe } from "./errors";
import type { Rng } from "./types";

/** sfc32-style generator (small fast counter): 128-bit state, passes practical statistical tests. */
export function createRng(seed: number): Rng {
  if (typeof seed !== "number" || !Number.isFinite(seed)) {
    throw new RoutingInputError("seed", `must be a finite number, got ${describe(seed)}`);
  }
  let a = 0x9e3779b9 ^ (seed >>> 0);
  let b = 0x243f6a88 ^ Math.floor(seed / 4294967296);
  let c = 0xb7e15162;
  let counter = 1;
  const step = (): number => {
    const t = (((a + b) | 0) + counter) | 0;
    counter = (counter + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return t >>> 0;
  };
  // Warm-up decorrelates nearby seeds (seed 1 vs seed 2).
  for (let i = 0; i < 12; i++) step();
  return {
    next(): number {
      return step() / 4294967296;
    },
  };
}

/** Standard normal deviate (Box–Muller), drawing two uniforms from `rng`. */
export function normal(rng: Rng): number {
  let u = rng.next();
  while (u <= 0) u = rng.next();
  const v = rng.next();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** Uniform integer in [0, n). */
export function randomInt(rng: Rng, n: number): number {
  return Math.min(n - 1, Math.floor(rng.next() * n));
}
