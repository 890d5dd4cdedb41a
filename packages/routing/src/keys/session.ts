// The session key of a chat that names no session (no `user`, no x-session-id): what stays fixed
// across the conversation's turns. It decides the tuner trial's arm ("a conversation stays in one
// arm"), session affinity's replica and the telemetry's session.
//
// The key is two cuts, each its first nBlocks × blockChars units of the canonical serialisation
// (the walk chatBlockKeys keys), so that what a client changes from turn to turn past them moves
// nothing:
//   - the preamble: a leading system message and the tools (ChatPreamble), or the tools and then, in
//     what is left of the cut, a leading developer message (OpenAI's newer models take the
//     instructions as `developer`). Not the documents, which a RAG client retrieves for each
//     question; not later system or developer messages, where clients put per-turn context (the
//     time, retrieved memories); and cut, so a timestamp at the end of a long system prompt does not
//     make every turn a new session.
//   - the conversation's first message: the first after the leading system and developer messages,
//     whatever its role. Turn 2 repeats turn 1's first message, so it keys as turn 1; two conversations of one
//     agent differ in it (the task), so they key apart.
// Keyed by the prompt's first 16 blocks (the paper's "first 256 tokens", sessionKeyFromBlocks),
// every conversation of an app with a 1 KB system prompt or tool set got one key (one trial arm, one
// affinity replica), and a first turn shorter than 16 blocks changed key at turn 2, whose 16th block
// took in the reply.
// What it cannot tell, with no id from the client (who should then send `user` or x-session-id):
//   - conversations whose first message is the same up to the cut: an app that opens every chat
//     with one greeting or few-shot example, or puts its instructions or a context block at the head
//     of the first user message (a model with no system role): one key for all of them;
//   - a conversation whose first message changes: a client that trims old turns from the start
//     (a sliding window) gets a new key at each turn once the first message is gone, and one the
//     model opens (its first request the preamble alone) changes key at turn 2;
//   - context retrieved into the first 1 KB of the system prompt (rather than into `documents`)
//     changes the key at each question.
//
// Cost: the chat's keying pass (chatBlockKeysWithState) notes where the preamble ends; the key takes
// the chained key of the preamble's cut from there and serialises the leading instructions and the
// first message again, hashing at most two cuts. Neither an 80 KB system prompt nor a tool set's
// canonical JSON is read again; an image's digest is made once (chat.ts mediaLabel); a first message
// holding megabytes of tool calls, or another media part, is serialised or digested twice.
import { describe, RoutingInputError } from "../errors";
import { hashString } from "../hash";
import type { BlockKey } from "../types";
import {
  type ChatMessageLike,
  type ChatPreamble,
  type ChatPromptExtras,
  chatBlockKeysWithState,
  mediaPiece,
  type SerialisationSink,
  serialiseMessages,
} from "./chat";
import { CanonicalStream, CHAIN_ORIGIN, checkBlockChars, DEFAULT_BLOCK_CHARS } from "./stream";

/**
 * A chat's session key, base 36 (≤ 11 characters): the hash of its preamble (a leading system
 * message and the tools, or the tools and a leading developer message) and of the first message after
 * the leading system and developer messages, each cut to its first nBlocks × blockChars units of the canonical serialisation. "" only for a chat with
 * nothing to key (no message, no tools). `keyed`: what chatBlockKeysWithState returned for these
 * messages, extras and blockChars, which saves serialising the preamble again; computed when left
 * out, with the same result.
 */
export function chatSessionKey(
  messages: readonly ChatMessageLike[],
  extras: ChatPromptExtras,
  nBlocks: number,
  blockChars = DEFAULT_BLOCK_CHARS,
  keyed?: { readonly keys: readonly BlockKey[]; readonly preamble: ChatPreamble },
): string {
  checkBlockChars(blockChars);
  if (!Number.isInteger(nBlocks) || nBlocks <= 0) {
    throw new RoutingInputError("nBlocks", `must be a positive integer, got ${describe(nBlocks)}`);
  }
  if (!Array.isArray(messages)) throw new RoutingInputError("messages", `must be an array, got ${describe(messages)}`);
  // The preamble holds at most the first message.
  const { keys, preamble } = keyed ?? chatBlockKeysWithState(messages.slice(0, 1), blockChars, { tools: extras.tools });
  // The preamble's cut: its first nBlocks full blocks are one chained key; shorter, its full blocks
  // and its open tail.
  const fullBlocks = Math.min(nBlocks, Math.floor(preamble.units / blockChars));
  if (keys.length < fullBlocks) {
    throw new RoutingInputError("keyed", `must be the chat's keying: ${keys.length} keys do not cover its preamble's ${fullBlocks} blocks`);
  }
  const rest = new CanonicalStream(blockChars);
  let first = preamble.next;
  while (first < messages.length && isInstruction(messages[first])) first++;
  if (fullBlocks < nBlocks) {
    for (const piece of preamble.tail) rest.write(piece);
    // A developer message that opens the chat is its instructions, as a system message would be: it
    // fills what is left of the preamble's cut, so apps that differ only there key apart. Later
    // instructions are skipped, not keyed: clients put per-turn context there (a time, memories).
    const left = nBlocks * blockChars - preamble.units;
    if (preamble.next === 0 && first > 0) serialiseMessages(firstUnits(rest, left), messages.slice(0, 1), 0, true);
  }
  // The first message starts a second cut of its own, hashed on from the preamble's.
  const conversation = firstUnits(rest, nBlocks * blockChars);
  if (first < messages.length) serialiseMessages(conversation, messages.slice(first, first + 1), first, true);
  if (preamble.units === 0 && rest.length === 0) return "";
  const origin = fullBlocks > 0 ? (keys[fullBlocks - 1] as number) : CHAIN_ORIGIN;
  const chained = rest.keys(origin);
  const last = chained.length > 0 ? (chained[chained.length - 1] as number) : origin;
  return hashString(rest.tailPieces().join(""), last).toString(36);
}

/** A message that gives instructions rather than starting the conversation: a system message, or
 * OpenAI's `developer` message, which its newer models take in place of one. */
function isInstruction(message: unknown): boolean {
  const role = message !== null && typeof message === "object" ? (message as { role?: unknown }).role : undefined;
  return role === "system" || role === "developer";
}

/** A sink that writes the first `limit` units of a serialisation into `stream`. A media part's piece
 * (a digest of its data) is made only when some of it falls before the limit, and then written
 * whole: its digest, at its end, is what tells two images apart. */
function firstUnits(stream: CanonicalStream, limit: number): SerialisationSink {
  let left = limit;
  const take = (piece: string): void => {
    if (left <= 0 || piece.length === 0) return;
    const kept = piece.length <= left ? piece : piece.slice(0, left);
    stream.write(kept);
    left -= kept.length;
  };
  return {
    text: take,
    media: (part, type) => {
      if (left <= 0) return;
      const piece = mediaPiece(part, type);
      stream.write(piece);
      left -= piece.length;
    },
  };
}
