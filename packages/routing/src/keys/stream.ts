// The canonical byte stream every text keyer writes into, and the chained block hash over it.
//
// Block keys chain: key_k = hash(key_{k-1}, block_k).
//
// Chat and completion prompts are cut into fixed blocks of `blockChars` UTF-16 code units (64 by
// default, about 16 tokens). Only FULL blocks get a key; the trailing partial block is dropped.
// Engines only reuse full KV blocks, and dropping the tail is what makes the keys of a prompt an
// exact prefix of the keys of prompt + assistant reply (the next turn), which next-turn learning
// relies on. A prompt shorter than one block therefore has no keys at all.
//
// Speed: an 80 KB prompt is ~1250 blocks and is keyed on every request, so the text is not hashed
// one charCodeAt at a time. Text is bulk-encoded with TextEncoder.encodeInto into a reusable byte
// buffer and each block is hashed 32 bits at a time. The canonical bytes of a block are the UTF-8
// (WHATWG, lone surrogates → U+FFFD) encoding of each piece's unit range inside that block, pieces
// being role, separators and content parts. An ASCII chunk is one encodeInto call plus arithmetic;
// a chunk with other characters is encoded whole and its UTF-8 walked to find where blocks end
// (≈ 2–4× the ASCII cost), and only a block boundary that splits a surrogate pair falls back to
// encoding segment by segment. Such a split pair encodes as two U+FFFD: harmless, and deterministic
// because block boundaries sit at fixed unit offsets. keys.test.ts checks all paths against a
// direct implementation of this rule.

import { RoutingInputError, describe } from "../errors";
import { finalizeLanes, seedLane1, seedLane2 } from "../hash";
import type { BlockKey } from "../types";

/** Default chat block size in characters (≈ 16 tokens at 4 chars/token, vLLM's block size). */
export const DEFAULT_BLOCK_CHARS = 64;
/** Ends a message's role in the canonical serialisation (ASCII unit separator). */
export const ROLE_SEPARATOR = "\u001f";
/** Ends a message's content in the canonical serialisation (ASCII record separator). */
export const MESSAGE_SEPARATOR = "\u001e";
/** Precedes a non-text content part (e.g. an image URL) so it cannot collide with plain text. */
export const PART_SEPARATOR = "\u001d";

/** The chain starts from this value, so the first block is hash(CHAIN_ORIGIN, block_0). */
export const CHAIN_ORIGIN = 0;

const encoder = new TextEncoder();
// Word-at-a-time reads through a Uint32Array view assume little-endian byte order; on a big-endian
// host the byte-assembling path (same result) is used instead.
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
/** Units per encodeInto attempt: a stray non-ASCII character only slows its own chunk. */
const CHUNK_UNITS = 4096;
const SCRATCH_INITIAL = 64 * 1024;
/** A buffer grown past this for one huge prompt is dropped afterwards rather than kept forever. */
const SCRATCH_RETAIN_MAX = 8 * 1024 * 1024;
let scratch = new Uint8Array(SCRATCH_INITIAL);
let scratchWords = new Uint32Array(scratch.buffer);

function ensureScratch(bytes: number): void {
  if (bytes <= scratch.length) return;
  let size = scratch.length;
  while (size < bytes) size *= 2;
  const next = new Uint8Array(size);
  next.set(scratch);
  scratch = next;
  scratchWords = new Uint32Array(scratch.buffer);
}

/**
 * A copy of a short string that does not point into its parent. V8 may represent a substring as a
 * view of the whole parent, so a keyer state holding the last 40 characters of an 80 KB message would
 * keep all 80 KB alive; slicing a fresh concatenation forces a flat copy of just these characters.
 */
function detach(piece: string): string {
  return (" " + piece).slice(1);
}

function align4(offset: number): number {
  return (offset + 3) & ~3;
}

/**
 * Writes text as canonical bytes into the scratch buffer and records each full block's byte range
 * (blocks of `blockChars` UTF-16 units). Blocks start 4-byte aligned wherever that is cheap (ASCII
 * text, and after every chunk) so most of them hash through aligned 32-bit reads; blocks inside a
 * non-ASCII chunk may start anywhere and hash through the byte-assembling path (same result).
 */
export class CanonicalStream {
  private bytes = 0;
  private units = 0;
  private nextBoundary: number;
  private blockStart = 0;
  private readonly ranges: number[] = []; // start0, end0, start1, end1, ...
  /** Pieces (or piece tails) of the open partial block, each kept whole: re-writing them one by one
   * reproduces that block's canonical bytes exactly (per-piece UTF-8), which a continuation needs. */
  private tail: string[] = [];

  constructor(private readonly blockChars: number) {
    this.nextBoundary = blockChars;
  }

  write(text: string): void {
    const n = text.length;
    if (n === 0) return;
    const unitsBefore = this.units;
    this.writeUnits(text, n);
    // The open block starts at the last boundary; keep only the part of this piece behind it.
    const openStart = this.nextBoundary - this.blockChars;
    if (openStart > unitsBefore) {
      this.tail = [];
      if (openStart - unitsBefore < n) this.tail.push(detach(text.substring(openStart - unitsBefore)));
    } else {
      this.tail.push(text);
    }
  }

  /** The partial block after the last full one, for continueChatBlockKeys / continuePromptBlockKeys. */
  tailPieces(): string[] {
    return this.tail.slice();
  }

  /** Units written so far. */
  get length(): number {
    return this.units;
  }

  private writeUnits(text: string, n: number): void {
    let from = 0;
    while (from < n) {
      // Chunks end on a block boundary (or the piece's end), so the only cuts through the text are
      // the semantic ones: block boundaries and piece boundaries.
      const firstBoundary = from + (this.nextBoundary - this.units);
      const limit = Math.min(n, from + CHUNK_UNITS);
      let to: number;
      if (limit === n || firstBoundary >= n) to = n;
      else if (limit <= firstBoundary) to = firstBoundary;
      else to = firstBoundary + Math.floor((limit - firstBoundary) / this.blockChars) * this.blockChars;
      this.writeChunk(text, from, to);
      from = to;
    }
  }

  private closeBlock(end: number, nextStart: number): void {
    this.ranges.push(this.blockStart, end);
    this.blockStart = nextStart;
    this.nextBoundary += this.blockChars;
  }

  private writeChunk(text: string, from: number, to: number): void {
    const len = to - from;
    // ≤ 3 bytes per unit plus ≤ 3 padding bytes per block (a block has ≥ 1 unit).
    ensureScratch(this.bytes + 6 * len + 8);
    if (len <= 16) {
      // Separators and roles: a call into the encoder costs more than this loop.
      let ascii = true;
      for (let i = 0; i < len; i++) {
        const c = text.charCodeAt(from + i);
        if (c >= 0x80) {
          ascii = false;
          break;
        }
        scratch[this.bytes + i] = c;
      }
      if (ascii) this.placeAsciiChunk(len);
      else this.encodeSegments(text, from, to);
      return;
    }
    const chunk = from === 0 && to === text.length ? text : text.substring(from, to);
    const written = encoder.encodeInto(chunk, scratch.subarray(this.bytes, this.bytes + 3 * len)).written;
    if (written === len) this.placeAsciiChunk(len);
    else if (!this.placeEncodedChunk(written, len)) this.encodeSegments(text, from, to);
  }

  /** ASCII chunk at [bytes, bytes + len): boundaries by arithmetic; realign after each boundary. */
  private placeAsciiChunk(len: number): void {
    let chunkStart = this.bytes; // byte offset of unit `this.units`
    let chunkEnd = chunkStart + len;
    const unitsAfter = this.units + len;
    while (this.nextBoundary <= unitsAfter) {
      const end = chunkStart + (this.nextBoundary - this.units);
      const pad = align4(end) - end;
      if (pad !== 0) {
        // Shift the rest of the chunk so the next block starts aligned. With 64-unit blocks this
        // happens at most once per chunk: after it, ASCII blocks are 64 bytes and stay aligned.
        scratch.copyWithin(end + pad, end, chunkEnd);
        chunkStart += pad;
        chunkEnd += pad;
      }
      this.closeBlock(end, end + pad);
    }
    this.bytes = chunkEnd;
    this.units = unitsAfter;
  }

  /**
   * Non-ASCII chunk, UTF-8 encoded at [bytes, bytes + written). Walks the encoded bytes (4 ASCII
   * bytes per step where it can; a lead byte gives each character's length) to find where every
   * block ends, then moves the block segments back to front so each block starts 4-byte aligned;
   * every byte moves at most once. Returns false, changing nothing, when a block boundary would
   * split a surrogate pair (whole-chunk UTF-8 cannot be cut there; the caller falls back).
   */
  private placeEncodedChunk(written: number, chunkUnits: number): boolean {
    const buf = scratch;
    const words = scratchWords;
    const start = this.bytes;
    const end = start + written;
    const cuts: number[] = []; // byte offsets where a block ends, in the encoded chunk
    let need = this.nextBoundary - this.units; // units until the next boundary
    let pos = start;
    while (pos < end) {
      if (need >= 4 && (pos & 3) === 0 && pos + 4 <= end && ((words[pos >>> 2] as number) & 0x80808080) === 0) {
        pos += 4;
        need -= 4;
      } else {
        const lead = buf[pos] as number;
        if (lead < 0x80) {
          pos += 1;
          need -= 1;
        } else if (lead >= 0xf0) {
          if (need === 1) return false; // a surrogate pair (2 units, 4 bytes) would straddle the boundary
          pos += 4;
          need -= 2;
        } else {
          pos += lead >= 0xe0 ? 3 : 2;
          need -= 1;
        }
      }
      if (need === 0) {
        cuts.push(pos);
        need = this.blockChars;
      }
    }
    // Segment k runs from cut k-1 (or the chunk start) to cut k; the last one is the open tail.
    const segments = cuts.length + 1;
    const oldStarts = new Array<number>(segments);
    const newStarts = new Array<number>(segments);
    oldStarts[0] = start;
    newStarts[0] = start;
    for (let k = 1; k < segments; k++) {
      const cut = cuts[k - 1] as number;
      oldStarts[k] = cut;
      newStarts[k] = align4((newStarts[k - 1] as number) + (cut - (oldStarts[k - 1] as number)));
    }
    // Shifts only grow along the chunk, and consecutive segments with the same shift (64-byte ASCII
    // blocks, 192-byte CJK blocks) move together: one copyWithin per run, last run first.
    let runEnd = end;
    for (let k = segments - 1; k >= 1; ) {
      const shift = (newStarts[k] as number) - (oldStarts[k] as number);
      let first = k;
      while (first > 1 && (newStarts[first - 1] as number) - (oldStarts[first - 1] as number) === shift) first--;
      if (shift !== 0) buf.copyWithin((oldStarts[first] as number) + shift, oldStarts[first] as number, runEnd);
      runEnd = oldStarts[first] as number;
      k = first - 1;
    }
    for (let k = 0; k + 1 < segments; k++) {
      const blockEnd = (newStarts[k] as number) + ((oldStarts[k + 1] as number) - (oldStarts[k] as number));
      this.closeBlock(blockEnd, newStarts[k + 1] as number);
    }
    this.bytes = (newStarts[segments - 1] as number) + (end - (oldStarts[segments - 1] as number));
    this.units += chunkUnits;
    return true;
  }

  /** Fallback: UTF-8 one block segment at a time; `written` locates each boundary. */
  private encodeSegments(text: string, from: number, to: number): void {
    let at = this.bytes;
    let i = from;
    while (i < to) {
      const segmentEnd = Math.min(to, i + (this.nextBoundary - this.units));
      const segment = text.substring(i, segmentEnd);
      at += encoder.encodeInto(segment, scratch.subarray(at, at + 3 * segment.length)).written;
      this.units += segmentEnd - i;
      i = segmentEnd;
      if (this.units === this.nextBoundary) {
        const end = at;
        at = align4(at);
        this.closeBlock(end, at);
      }
    }
    this.bytes = at;
  }

  /** Chained keys of the recorded full blocks, the chain starting from `origin`. */
  keys(origin: number = CHAIN_ORIGIN): BlockKey[] {
    const ranges = this.ranges;
    const keys = new Array<BlockKey>(ranges.length >> 1);
    let prev = origin;
    for (let b = 0; b < keys.length; b++) {
      prev = hashBytes(ranges[2 * b] as number, ranges[2 * b + 1] as number, prev);
      keys[b] = prev;
    }
    if (scratch.length > SCRATCH_RETAIN_MAX) {
      scratch = new Uint8Array(SCRATCH_INITIAL);
      scratchWords = new Uint32Array(scratch.buffer);
    }
    return keys;
  }
}

/** hash(prev, scratch[start, end)): little-endian 32-bit words, the tail zero-padded, the byte
 * length mixed in. Aligned starts read whole words; others assemble bytes (same result). */
function hashBytes(start: number, end: number, prev: number): BlockKey {
  let h1 = seedLane1(prev);
  let h2 = seedLane2(prev);
  const length = end - start;
  const tailBytes = length & 3;
  if (LITTLE_ENDIAN && (start & 3) === 0) {
    const words = scratchWords;
    const first = start >>> 2;
    const last = first + (length >>> 2);
    for (let w = first; w < last; w++) {
      const word = words[w] as number;
      h1 = Math.imul(h1 ^ word, 0x9e3779b1);
      h2 = Math.imul(h2 ^ word, 0x85ebca77);
    }
    if (tailBytes !== 0) {
      const word = (words[last] as number) & ((1 << (8 * tailBytes)) - 1);
      h1 = Math.imul(h1 ^ word, 0x9e3779b1);
      h2 = Math.imul(h2 ^ word, 0x85ebca77);
    }
  } else {
    const buf = scratch;
    const wordEnd = end - tailBytes;
    let i = start;
    for (; i < wordEnd; i += 4) {
      const word = (buf[i] as number) | ((buf[i + 1] as number) << 8) | ((buf[i + 2] as number) << 16) | ((buf[i + 3] as number) << 24);
      h1 = Math.imul(h1 ^ word, 0x9e3779b1);
      h2 = Math.imul(h2 ^ word, 0x85ebca77);
    }
    if (tailBytes !== 0) {
      let word = 0;
      for (let shift = 0; i < end; i++, shift += 8) word |= (buf[i] as number) << shift;
      h1 = Math.imul(h1 ^ word, 0x9e3779b1);
      h2 = Math.imul(h2 ^ word, 0x85ebca77);
    }
  }
  return finalizeLanes(h1 ^ length, h2);
}

export function checkBlockChars(blockChars: number): void {
  if (!Number.isInteger(blockChars) || blockChars <= 0) {
    throw new RoutingInputError("blockChars", `must be a positive integer, got ${describe(blockChars)}`);
  }
}

/**
 * Where a keyed text stopped: enough to key an extension of it (prompt + assistant reply, the next
 * turn) without re-reading the text. Immutable once returned; plain data.
 */
export interface BlockKeyerState {
  readonly kind: "chat" | "prompt";
  readonly blockChars: number;
  /** Full blocks keyed so far. */
  readonly blocks: number;
  /** Key of the last full block (the chain value the next block hashes from). */
  readonly lastKey: BlockKey;
  /** The open partial block, as the pieces (or piece tails) it was written in. */
  readonly tail: readonly string[];
  /** Messages consumed so far (chat), for error field names. */
  readonly messages: number;
}

export function keyerState(
  kind: "chat" | "prompt",
  blockChars: number,
  keys: readonly BlockKey[],
  chainer: CanonicalStream,
  origin: number,
  blocksBefore: number,
  messages: number,
): BlockKeyerState {
  return {
    kind,
    blockChars,
    blocks: blocksBefore + keys.length,
    lastKey: keys.length > 0 ? (keys[keys.length - 1] as number) : origin,
    tail: chainer.tailPieces(),
    messages,
  };
}

export function checkState(state: BlockKeyerState, kind: "chat" | "prompt"): void {
  if (state === null || typeof state !== "object" || state.kind !== kind || !Array.isArray(state.tail)) {
    throw new RoutingInputError("state", `must be the ${kind} keyer state of a previous call, got ${describe(state)}`);
  }
  checkBlockChars(state.blockChars);
}
