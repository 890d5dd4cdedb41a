// The prefix index's block table: block key → the slot of the block's first route, as an
// open-addressing hash table (linear probing, backward-shift delete) over typed arrays. Block keys
// are already hashes, so one multiply spreads them over the mask. The load factor stays ≤ 1/2 so
// probes stay short.

export const NIL = -1;
const INITIAL_TABLE = 2048;

/** Table slot for a key: block keys are already hashes, one multiply spreads them over the mask. */
function tableHash(key: number): number {
  return Math.imul((key >>> 0) ^ ((key / 4294967296) | 0), 0x9e3779b1) >>> 0;
}

export class BlockTable {
  keys: Float64Array = new Float64Array(0);
  /** Head route slot per table index; NIL marks an empty index. */
  heads: Int32Array = new Int32Array(0);
  private mask = 0;
  /** Distinct blocks stored. */
  count = 0;

  constructor() {
    this.reset();
  }

  reset(): void {
    this.keys = new Float64Array(INITIAL_TABLE);
    this.heads = new Int32Array(INITIAL_TABLE).fill(NIL);
    this.mask = INITIAL_TABLE - 1;
    this.count = 0;
  }

  /** Table index of `key`, or -1. */
  find(key: number): number {
    const mask = this.mask;
    const keys = this.keys;
    const heads = this.heads;
    let i = tableHash(key) & mask;
    while (heads[i] !== NIL) {
      if (keys[i] === key) return i;
      i = (i + 1) & mask;
    }
    return -1;
  }

  /** Adds `key` (absent) and returns its index; the caller sets its head. */
  insert(key: number): number {
    if ((this.count + 1) * 2 > this.keys.length) this.grow();
    const mask = this.mask;
    let i = tableHash(key) & mask;
    while (this.heads[i] !== NIL) i = (i + 1) & mask;
    this.keys[i] = key;
    this.count++;
    return i;
  }

  /** Empties index `hole`, shifting later entries of its probe run back so lookups still find them. */
  remove(hole: number): void {
    const mask = this.mask;
    const keys = this.keys;
    const heads = this.heads;
    let i = hole;
    let j = hole;
    for (;;) {
      j = (j + 1) & mask;
      if (heads[j] === NIL) break;
      const ideal = tableHash(keys[j] as number) & mask;
      // Move j back into the hole unless its ideal slot lies cyclically in (i, j].
      const inRange = i <= j ? ideal > i && ideal <= j : ideal > i || ideal <= j;
      if (!inRange) {
        keys[i] = keys[j] as number;
        heads[i] = heads[j] as number;
        i = j;
      }
    }
    heads[i] = NIL;
    this.count--;
  }

  private grow(): void {
    const oldKeys = this.keys;
    const oldHeads = this.heads;
    const size = oldKeys.length * 2;
    this.keys = new Float64Array(size);
    this.heads = new Int32Array(size).fill(NIL);
    this.mask = size - 1;
    for (let i = 0; i < oldKeys.length; i++) {
      if (oldHeads[i] === NIL) continue;
      let j = tableHash(oldKeys[i] as number) & this.mask;
      while (this.heads[j] !== NIL) j = (j + 1) & this.mask;
      this.keys[j] = oldKeys[i] as number;
      this.heads[j] = oldHeads[i] as number;
    }
  }
}
