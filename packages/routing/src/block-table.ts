// The PrefixIndex's block table: block key -> first route slot, an open-addressing hash table with
// linear probing and backward-shift deletion (no tombstones, so probe runs stay short however many
// blocks come and go). Keys are 53-bit block keys, which are already hashes: one multiply spreads
// them over the mask. The load factor stays at or below 1/2.

export const NIL = -1;
const INITIAL_SIZE = 2048;

/** Table slot for a key. */
function slotHash(key: number): number {
  return Math.imul((key >>> 0) ^ ((key / 4294967296) | 0), 0x9e3779b1) >>> 0;
}

export class BlockTable {
  keys: Float64Array = new Float64Array(INITIAL_SIZE);
  /** First route slot of the block, NIL when the table slot is empty. */
  heads: Int32Array = new Int32Array(INITIAL_SIZE).fill(NIL);
  private mask = INITIAL_SIZE - 1;
  /** Distinct blocks stored. */
  count = 0;

  clear(): void {
    this.keys = new Float64Array(INITIAL_SIZE);
    this.heads = new Int32Array(INITIAL_SIZE).fill(NIL);
    this.mask = INITIAL_SIZE - 1;
    this.count = 0;
  }

  /** Table index of `key`, or -1. */
  find(key: number): number {
    const mask = this.mask;
    const keys = this.keys;
    const heads = this.heads;
    let i = slotHash(key) & mask;
    while (heads[i] !== NIL) {
      if (keys[i] === key) return i;
      i = (i + 1) & mask;
    }
    return -1;
  }

  /** First route slot of `key`, or NIL. */
  head(key: number): number {
    const t = this.find(key);
    return t < 0 ? NIL : (this.heads[t] as number);
  }

  /** Inserts a key known to be absent; the caller sets its head. Returns its table index. */
  insert(key: number): number {
    if ((this.count + 1) * 2 > this.keys.length) this.grow();
    const mask = this.mask;
    let i = slotHash(key) & mask;
    while (this.heads[i] !== NIL) i = (i + 1) & mask;
    this.keys[i] = key;
    this.count++;
    return i;
  }

  /** Empties table slot `hole`, shifting later entries of its probe run back. */
  delete(hole: number): void {
    const mask = this.mask;
    const keys = this.keys;
    const heads = this.heads;
    let i = hole;
    let j = hole;
    for (;;) {
      j = (j + 1) & mask;
      if (heads[j] === NIL) break;
      const ideal = slotHash(keys[j] as number) & mask;
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
      let j = slotHash(oldKeys[i] as number) & this.mask;
      while (this.heads[j] !== NIL) j = (j + 1) & this.mask;
      this.keys[j] = oldKeys[i] as number;
      this.heads[j] = oldHeads[i] as number;
    }
  }
}
