// Which conversation a trace row belongs to, derived from the trace itself. A Mooncake-format row
// carries only prefix-chained block ids; a prefix that many rows share is a shared prompt (a system
// prompt, an agent's tool prompt), not a conversation, so the conversation starts at the first
// block after it. The simulator (buildSimRequests) and the live replay (traceItems) both ask this
// one function, for the session key and for the client region alike.
import type { HashId, TraceRequest } from "./types";

/**
 * A prefix held by more than this share of a workload's conversations, after which they part, is a
 * shared prompt (sessionRoots). Rows that share more than that and part are not kept in one
 * session, which would move a by-session A/B split or the client region mix by that much. A shared
 * prompt worth the name is held by far more (block 0 of the conversation trace by every row, a tool
 * prompt by most). A conversation's own turns never part (sessionRoots), so its share does not
 * matter: the conversation trace's largest conversation holds 0.36 % of its rows, but 6 % of some
 * 50-row windows, and it stays one session there.
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
 * two conversations.
 */
export const MIN_KEY_BLOCKS = 2;

/** The rule in a line, for outputs that say how sessions were keyed. */
export const SESSION_KEY_RULE = `the conversation: the first block after the deepest prefix that more than ${SHARED_PREFIX_SHARE * 100} % of the conversations hold and part after, at least ${MIN_KEY_BLOCKS} blocks (the first 2 on the Mooncake conversation trace)`;

type SessionRow = Pick<TraceRequest, "hashIds" | "sessionId">;

/** A stable key for the first `blocks` hash ids: "0/14" for [0, 14, ...] at 2. */
export function sessionKeyOf(hashIds: readonly HashId[], blocks: number): string {
  return hashIds.slice(0, blocks).map(String).join("/");
}

/**
 * Each row's conversation, in the order given. A shared prompt is a prefix that many rows hold and
 * after which they part into different conversations; a row's key is the first block after the
 * deepest shared prompt it holds, never shorter than MIN_KEY_BLOCKS; a row that ends before reaching
 * that block keys on its whole prompt.
 *
 * - "Many": more than SHARED_PREFIX_SHARE of the workload's conversations (rows, or generator
 *   sessions: rows with a `sessionId` count once per session, so a run of a few long sessions does
 *   not make each session's own prefix look shared), and always more than one.
 * - "Part": the rows holding the prefix continue with two different full blocks, or end right after
 *   it in more different last blocks than one conversation's turns could (parts()). A row's last block is partial (the prompt's
 *   tail), and the next turn of the same conversation, having filled it, holds a different id there;
 *   so one conversation's turns, however many, continue with one full block and never part, and a
 *   long conversation (an agent's loop) stays one session in any window. A shared prompt is
 *   followed by different conversations, which do part.
 *
 * On the Mooncake conversation trace that is the first two ids for every row (block 0 is held by
 * all rows, which part after it; no 2-block prefix by more than 0.36 %), as the simulator and replay
 * keyed it before; on a tool-agent trace it is the first block after the tool prompt.
 *
 * Known limits (a reviewer's repros): a prompt held by 5 % of the conversations or fewer (one agent
 * among 25) is never found shared, so that agent's conversations are one session, keyed on its
 * prompt's first blocks; a long conversation that retries a turn with another output parts there,
 * once its later turns hold more than 5 % of the rows. A lower share would find the first, and
 * re-key the conversation trace: 116 of its 2-block prefixes are followed by two or more different
 * blocks (conversations that begin alike, or a turn sent again). Counts are
 * over the rows given (a window), so a window is keyed by what it holds; the ids of a prefix are
 * compared in full, not assumed to be chained (a hand-built trace's need not be).
 */
export function sessionRoots(rows: readonly SessionRow[], options: SessionRootOptions = {}): SessionRoot[] {
  const depths = options.blocks === undefined ? derivedDepths(rows, options.sharedShare ?? SHARED_PREFIX_SHARE) : fixedDepths(rows, options.blocks);
  return rows.map((row, i) => ({ blocks: depths[i]!, id: sessionKeyOf(row.hashIds, depths[i]!) }));
}

function fixedDepths(rows: readonly SessionRow[], blocks: number): number[] {
  if (!Number.isInteger(blocks) || blocks < 1) throw new Error(`session key blocks must be a positive integer, got ${blocks}`);
  return rows.map((row) => Math.min(blocks, row.hashIds.length));
}

/** A prefix at one depth: how many conversations hold it, and the full block that follows it (or PARTS). */
interface PrefixNode {
  holders: number;
  /** The generator sessions counted (a trace row is a conversation of its own, counted as it comes). */
  sessions: Set<string | number> | null;
  /** The blocks that follow the prefix in some row and are not its last (held full): none, one, or MANY. */
  continued: HashId | typeof NONE | typeof MANY;
  /** The different blocks that follow it as some row's last block (counted up to TURNS_ENDING_IN_ONE_BLOCK + 1). */
  ended: Set<HashId> | null;
}
const NONE = Symbol("none");
const MANY = Symbol("two or more");

/** One more id seen: NONE becomes it, a different one makes MANY. */
function seenAlso(state: HashId | typeof NONE | typeof MANY, id: HashId): HashId | typeof MANY {
  return state === NONE || state === id ? id : MANY;
}

/**
 * More of one conversation's turns than this do not end in the same block: each turn adds a reply
 * and a message, and sixteen in one 512-token block would average 32 tokens a turn. (The
 * conversation trace has one conversation with 9 turns ending in one block, its most.)
 */
export const TURNS_ENDING_IN_ONE_BLOCK = 16;

/**
 * Whether the rows holding a prefix part after it. One conversation's turns continue with one full
 * block, and a few of them may end there, each in a partial block of its own; different
 * conversations continue with different blocks, or end there in more different last blocks than one
 * conversation's turns could (a shared document and its questions: a block each, however many
 * questions go on past it).
 */
function parts(node: PrefixNode): boolean {
  const ended = node.ended?.size ?? 0;
  return node.continued === MANY || (node.continued === NONE ? ended >= 2 : ended > TURNS_ENDING_IN_ONE_BLOCK);
}

/**
 * Level by level, over the rows whose prefix so far is held by many: at depth d a row's prefix is
 * interned as (its (d−1)-prefix's node, the d-th id), with numbers and Maps, not strings (a 240-block
 * shared prompt over 30,000 rows is 7 million steps). A row leaves the walk when its prefix is held
 * by few or its prompt ends; what it keeps is the depth of the deepest shared prompt it held.
 */
function derivedDepths(rows: readonly SessionRow[], share: number): number[] {
  if (!(share > 0 && share < 1)) throw new Error(`sharedShare must be between 0 and 1, got ${share}`);
  const sessions = new Set(rows.flatMap((row) => (row.sessionId === undefined ? [] : [row.sessionId])));
  const conversations = sessions.size + rows.filter((row) => row.sessionId === undefined).length;
  // Many: held by more than this many conversations, and always by more than one.
  const limit = Math.max(1, share * conversations);
  const shared = rows.map(() => 0);
  const nodeOf = rows.map(() => 0);
  let open = rows.flatMap((row, i) => (row.hashIds.length > 0 ? [i] : []));
  for (let d = 1; open.length > 0; d++) {
    const children = new Map<number, Map<HashId, number>>();
    const nodes: PrefixNode[] = [];
    for (const i of open) {
      const ids = rows[i]!.hashIds;
      let byId = children.get(nodeOf[i]!);
      if (byId === undefined) children.set(nodeOf[i]!, (byId = new Map()));
      let node = byId.get(ids[d - 1]!);
      if (node === undefined) {
        node = nodes.length;
        byId.set(ids[d - 1]!, node);
        nodes.push({ holders: 0, sessions: null, continued: NONE, ended: null });
      }
      nodeOf[i] = node;
      const n = nodes[node]!;
      const session = rows[i]!.sessionId;
      if (session === undefined) n.holders++;
      else if (!(n.sessions ??= new Set()).has(session)) {
        n.sessions.add(session);
        n.holders++;
      }
      // The block after the prefix: held full (the row goes on), or the row's last.
      if (d + 1 < ids.length) n.continued = seenAlso(n.continued, ids[d]!);
      else if (d < ids.length && (n.ended?.size ?? 0) <= TURNS_ENDING_IN_ONE_BLOCK) (n.ended ??= new Set()).add(ids[d]!);
    }
    const next: number[] = [];
    for (const i of open) {
      const n = nodes[nodeOf[i]!]!;
      if (n.holders <= limit) continue;
      if (parts(n)) shared[i] = d;
      if (d < rows[i]!.hashIds.length) next.push(i);
    }
    open = next;
  }
  return rows.map((row, i) => Math.min(row.hashIds.length, Math.max(MIN_KEY_BLOCKS, shared[i]! + 1)));
}
