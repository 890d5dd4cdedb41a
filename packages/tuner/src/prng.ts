// A small seeded PRNG whose whole state is four uint32 words, so it can live inside the tuner's
// JSON-serialisable state and a restored tuner continues the exact same random sequence.
// Algorithm: sfc32 (Chris Doty-Humphrey's Small Fast Counting generator), seeded through splitmix32.

export type PrngState = [number, number, number, number];

function splitmix32(seed: number): () => number {
  let value = seed >>> 0;
  return () => {
    value = (value + 0x9e3779b9) >>> 0;
    let mixed = value;
    mixed = Math.imul(mixed ^ (mixed >>> 16), 0x21f0aaad);
    mixed = Math.imul(mixed ^ (mixed >>> 15), 0x735a2d97);
    return (mixed ^ (mixed >>> 15)) >>> 0;
  };
}

/** `seed` is any safe integer; its high bits are folded in so seeds above 2^32 stay distinct. */
export function seedPrng(seed: number): PrngState {
  const next = splitmix32((seed ^ Math.floor(seed / 4294967296)) >>> 0);
  const state: PrngState = [next(), next(), next(), 1];
  // The first outputs of sfc32 are correlated with the seed; discard a few, as its author recommends.
  for (let i = 0; i < 12; i++) nextUniform(state);
  return state;
}

/** Uniform in [0, 1); advances `state` in place. */
export function nextUniform(state: PrngState): number {
  let [a, b, c, d] = state;
  const t = (((a + b) | 0) + d) | 0;
  d = (d + 1) | 0;
  a = b ^ (b >>> 9);
  b = (c + (c << 3)) | 0;
  c = (c << 21) | (c >>> 11);
  c = (c + t) | 0;
  state[0] = a >>> 0;
  state[1] = b >>> 0;
  state[2] = c >>> 0;
  state[3] = d >>> 0;
  return (t >>> 0) / 4294967296;
}

/** Standard normal draw (Box–Muller). The second variate is discarded so the state stays four words. */
export function nextNormal(state: PrngState): number {
  let u = nextUniform(state);
  while (u === 0) u = nextUniform(state); // ln(0) would be -Infinity
  const v = nextUniform(state);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}
