// The session key of a chat that names no session (no `user`, no x-session-id): what stays fixed
// across the conversation's turns. It decides the tuner trial's arm ("a conversation stays in one
// arm"), session affinity's replica and the telemetry's session.
//
// The key is the preamble (a leading system message, the tools, the documents: ChatPreamble) plus
// the FIRST message after it, whatever its role, cut to the first nBlocks × blockChars characters of
// its canonical serialisation (the same walk chatBlockKeys keys). Turn 2 repeats turn 1's preamble and first message, so it keys as turn 1; two
// conversations of one agent share the preamble and differ in their first message (the task), so
// they key apart. Keyed by the prompt's first 16 blocks (the paper's "first 256 tokens",
// sessionKeyFromBlocks), every conversation of an app with a 1 KB system prompt or tool set got one
// key (one trial arm, one affinity replica), and a first turn shorter than 16 blocks changed key at
// turn 2, whose 16th block took in the reply.
//
// Cost: the chat's keying pass (chatBlockKeysWithState) notes where the preamble ends; from there
// only the preamble's open block and the cut first message (< blockChars + nBlocks × blockChars
// units) are hashed, chained from the key of the preamble's last full block. Neither an 80 KB system
// prompt nor a tool set's canonical JSON is read again.
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
 * message, the tools, the documents) and the first nBlocks × blockChars units of the canonical
 * serialisation of the first message after it. "" only for a chat with nothing to key (no message,
 * no tools, no documents). `keyed`: what chatBlockKeysWithState returned for these messages, extras
 * and blockChars, which saves serialising the preamble again; computed when left out, with the same result.
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
  // The preamble holds at most one message, so the first two hold it and the first message after it.
  const { keys, preamble } = keyed ?? chatBlockKeysWithState(messages.slice(0, 2), blockChars, extras);
  const fullBlocks = Math.floor(preamble.units / blockChars);
  if (keys.length < fullBlocks) {
    throw new RoutingInputError("keyed", `must be the chat's keying: ${keys.length} keys do not cover its preamble's ${fullBlocks} blocks`);
  }
  // The rest starts on a block boundary, so it chains on from the preamble's last full block.
  const rest = new CanonicalStream(blockChars);
  for (const piece of preamble.tail) rest.write(piece);
  const { next } = preamble;
  if (next < messages.length) serialiseMessages(firstUnits(rest, nBlocks * blockChars), messages.slice(next, next + 1), next, true);
  if (preamble.units === 0 && rest.length === 0) return "";
  const origin = fullBlocks > 0 ? (keys[fullBlocks - 1] as number) : CHAIN_ORIGIN;
  const chained = rest.keys(origin);
  const last = chained.length > 0 ? (chained[chained.length - 1] as number) : origin;
  return hashString(rest.tailPieces().join(""), last).toString(36);
}

/** A sink that writes the first `limit` units of a serialisation into `stream`. A media part's
 * piece (a digest of its data) is made only when some of it falls before the limit. */
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
      if (left > 0) take(mediaPiece(part, type));
    },
  };
}
