// Which conversation a trace row belongs to, derived from the trace itself. A Mooncake-format row
// carries only prefix-chained block ids; a prefix that many rows share is a shared prompt (a system
// prompt, an agent's tool prompt), not a conversation, so the conversation starts at the first
// block after it. The simulator (buildSimRequests) and the live replay (traceItems) both ask this
// one function, for the session key and for the client region alike.
import type { HashId, TraceRequest } from "./types";

/**
 * A prefix held by more than this share of a workload's conversations is a shared prompt. Every
 * session key but a whole-prompt one (below) then holds at most 5 % of the rows, so one session
 * moves a by-session A/B split or the client region mix by at most that much. Lower would split
 * real conversations in short windows: the conversation trace's largest conversation holds 0.36 %
 * of its 12,031 rows, but up to 4 % of a 100-row window and 6 % of some 50-row ones, while a shared
 * prompt worth the name is held by far more (block 0 of that trace by every row, a tool prompt by
 * most). A prefix held by one conversation alone is never shared, whatever the share.
 */
export const SHARED_PREFIX_SHARE = 0.05;

/** A row's conversation: the leading `blocks` hash ids, and those ids as a key ("0/14"). */
export interface SessionRoot {
  /** Leading hash ids the key covers (0 only for a row with no hash ids). */
  blocks: number;
  /** The ids joined by "/": the replay's session id and the key client regions are drawn from. */
  id: string;
}

export interface SessionRootOptions {
  /** A fixed key depth instead of the derived one (the simulator's `sessionKeyBlocks`). */
  blocks?: number;
  /** Override SHARED_PREFIX_SHARE (0 < share < 1). */
  sharedShare?: number;
}

/**
 * A derived key covers at least this many blocks (fewer only when the prompt has fewer): the fixed
 * depth the simulator and replay used before the rule, so on every trace where no prefix longer than
 * one block is shared the keys, regions and figures are what they were (Mooncake's synthetic trace
 * shares no block 0, and a one-block key would re-draw all its regions). A longer key never joins
 * two conversations; at most it parts one whose turns differ in their second block.
 */
export const MIN_KEY_BLOCKS = 2;

/** The rule in a line, for outputs that say how sessions were keyed. */
export const SESSION_KEY_RULE = `the conversation: the first block after any prefix held by more than ${SHARED_PREFIX_SHARE * 100} % of the rows, at least ${MIN_KEY_BLOCKS} blocks (the first 2 on the Mooncake conversation trace)`;

type SessionRow = Pick<TraceRequest, "hashIds" | "sessionId">;

/** A stable key for the first `blocks` hash ids: "0/14" for [0, 14, ...] at 2. */
export function sessionKeyOf(hashIds: readonly HashId[], blocks: number): string {
  return hashIds.slice(0, blocks).map(String).join("/");
}

/**
 * Each row's conversation, in the order given. A row's key is its shortest prefix that is not a
 * shared prompt, never shorter than MIN_KEY_BLOCKS (2) blocks; a row whose whole prompt is a shared prefix keys on
 * all of it. A prefix is a shared prompt when more than SHARED_PREFIX_SHARE of the workload's
 * conversations hold it, more than one does, and its rows part after it (they are not one chain of
 * turns, each extending the last: a short trace may hold little but one conversation). On the Mooncake conversation trace that is the first two ids for every row (block 0 is held
 * by all rows, no 2-block prefix by more than 0.36 %), as the simulator and replay keyed it before;
 * on a tool-agent trace it is the first block after the tool prompt.
 *
 * A conversation is a row, or the rows of a generator session (rows with a `sessionId` count once
 * per session): a generator run with few sessions holds each in many turns, and those turns must
 * not make the session's own prefix look shared. Counts are over the rows given (a window), so a
 * window is keyed by what it holds; the ids of a prefix are compared in full, not assumed to be
 * chained (a hand-built trace's need not be).
 */
export function sessionRoots(rows: readonly SessionRow[], options: SessionRootOptions = {}): SessionRoot[] {
  const depths = options.blocks === undefined ? derivedDepths(rows, options.sharedShare ?? SHARED_PREFIX_SHARE) : fixedDepths(rows, options.blocks);
  return rows.map((row, i) => ({ blocks: depths[i]!, id: sessionKeyOf(row.hashIds, depths[i]!) }));
}

function fixedDepths(rows: readonly SessionRow[], blocks: number): number[] {
  if (!Number.isInteger(blocks) || blocks < 1) throw new Error(`session key blocks must be a positive integer, got ${blocks}`);
  return rows.map((row) => Math.min(blocks, row.hashIds.length));
}

/**
 * Level by level: at depth d only rows whose (d−1)-prefix was shared are still open, and every row
 * holding a d-prefix is among them (its shorter prefixes are held by at least as many), so each
 * count is complete and the work is about the sum of the key depths, not of the prompt lengths.
 */
function derivedDepths(rows: readonly SessionRow[], share: number): number[] {
  if (!(share > 0 && share < 1)) throw new Error(`sharedShare must be between 0 and 1, got ${share}`);
  const holder = rows.map((row, i) => (row.sessionId === undefined ? `r${i}` : `s${row.sessionId}`));
  // Shared: held by more than this many conversations, and always by more than one.
  const limit = Math.max(1, share * new Set(holder).size);
  const depth = rows.map(() => 0);
  const prefixOf = rows.map(() => 0);
  let open = rows.flatMap((row, i) => (row.hashIds.length > 0 ? [i] : []));
  for (let d = 1; open.length > 0; d++) {
    const ids = new Map<string, number>();
    const prefixes: { holders: number; rows: number[] }[] = [];
    const seen = new Set<string>();
    for (const i of open) {
      const id = rows[i]!.hashIds[d - 1]!;
      // The prefix is (its (d−1)-prefix, this id); the type tag keeps 10 and "10" apart.
      const key = `${prefixOf[i]}:${typeof id === "number" ? "n" : "s"}${id}`;
      let prefix = ids.get(key);
      if (prefix === undefined) {
        prefix = prefixes.length;
        ids.set(key, prefix);
        prefixes.push({ holders: 0, rows: [] });
      }
      prefixOf[i] = prefix;
      const p = prefixes[prefix]!;
      p.rows.push(i);
      // A generator session's later turns hold the same prefix: count the session once.
      const seenKey = `${prefix}:${holder[i]}`;
      if (!seen.has(seenKey)) {
        seen.add(seenKey);
        p.holders++;
      }
    }
    const next: number[] = [];
    for (const p of prefixes) {
      const shared = p.holders > limit && !oneChain(rows, p.rows, d);
      for (const i of p.rows) {
        depth[i] = d;
        if (shared && d < rows[i]!.hashIds.length) next.push(i);
      }
    }
    open = next;
  }
  return depth.map((d, i) => Math.max(d, Math.min(MIN_KEY_BLOCKS, rows[i]!.hashIds.length)));
}

/**
 * Whether the rows (all holding the same d-prefix) are one chain, each a prefix of the longest: one
 * conversation's turns, each extending the last, however many of them a short trace holds. A
 * shared prompt is followed by different conversations, so its rows part somewhere after it.
 */
function oneChain(rows: readonly SessionRow[], members: readonly number[], d: number): boolean {
  let longest = rows[members[0]!]!.hashIds;
  for (const i of members) if (rows[i]!.hashIds.length > longest.length) longest = rows[i]!.hashIds;
  for (const i of members) {
    const ids = rows[i]!.hashIds;
    for (let k = d; k < ids.length; k++) if (ids[k] !== longest[k]) return false;
  }
  return true;
}
