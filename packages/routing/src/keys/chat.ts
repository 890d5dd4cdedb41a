// The chat keyer: a chat prompt's messages as the canonical serialisation `role ␟ content ␞` per
// message, cut into chained block keys (stream.ts), and continued with appended messages (the next
// turn) from a keyer state without re-reading the prompt.
import { RoutingInputError, describe } from "../errors";
import type { BlockKey } from "../types";
import {
  CanonicalStream,
  CHAIN_ORIGIN,
  checkBlockChars,
  checkState,
  DEFAULT_BLOCK_CHARS,
  keyerState,
  MESSAGE_SEPARATOR,
  PART_SEPARATOR,
  ROLE_SEPARATOR,
  type BlockKeyerState,
} from "./stream";

export interface ChatMessageLike {
  role: string;
  content: unknown;
}

function feedContent(chainer: CanonicalStream, content: unknown, index: number): void {
  if (typeof content === "string") {
    chainer.write(content);
    return;
  }
  if (content === null || content === undefined) return; // e.g. assistant tool-call turns
  if (!Array.isArray(content)) {
    throw new RoutingInputError(`messages[${index}].content`, `must be a string, null or an array of content parts, got ${describe(content)}`);
  }
  for (let p = 0; p < content.length; p++) {
    const part: unknown = content[p];
    if (typeof part === "string") {
      chainer.write(part);
      continue;
    }
    if (part === null || typeof part !== "object") {
      throw new RoutingInputError(`messages[${index}].content[${p}]`, `must be a content part object, got ${describe(part)}`);
    }
    const record = part as { type?: unknown; text?: unknown; image_url?: unknown };
    if (typeof record.text === "string") {
      chainer.write(record.text);
    } else if (record.type === "text") {
      throw new RoutingInputError(`messages[${index}].content[${p}].text`, `must be a string, got ${describe(record.text)}`);
    } else if (record.type === "image_url") {
      // Different images must not share a key: the image URL (or data URL) stands in for its tokens.
      const image = record.image_url;
      const url = typeof image === "string" ? image : image && typeof image === "object" ? (image as { url?: unknown }).url : undefined;
      if (typeof url === "string") {
        chainer.write(PART_SEPARATOR);
        chainer.write(url);
      }
    }
    // Other part types (audio, files) carry no text we can key cheaply; they are skipped.
  }
}

function feedMessages(chainer: CanonicalStream, messages: readonly ChatMessageLike[], firstIndex: number): void {
  if (!Array.isArray(messages)) throw new RoutingInputError("messages", `must be an array, got ${describe(messages)}`);
  for (let m = 0; m < messages.length; m++) {
    const i = firstIndex + m;
    const message = messages[m];
    if (message === null || typeof message !== "object") {
      throw new RoutingInputError(`messages[${i}]`, `must be an object, got ${describe(message)}`);
    }
    if (typeof message.role !== "string") {
      throw new RoutingInputError(`messages[${i}].role`, `must be a string, got ${describe(message.role)}`);
    }
    chainer.write(message.role);
    chainer.write(ROLE_SEPARATOR);
    feedContent(chainer, message.content, i);
    chainer.write(MESSAGE_SEPARATOR);
  }
}

/**
 * Chained keys of a chat prompt. Canonical serialisation per message:
 * `role ␟ content ␞`, where an array content contributes its text parts concatenated (and image URLs
 * behind ␝). Only full blocks are keyed (see the file header).
 */
export function chatBlockKeys(messages: readonly ChatMessageLike[], blockChars = DEFAULT_BLOCK_CHARS): BlockKey[] {
  return chatBlockKeysWithState(messages, blockChars).keys;
}

/** chatBlockKeys plus the state continueChatBlockKeys needs to key appended messages. */
export function chatBlockKeysWithState(messages: readonly ChatMessageLike[], blockChars = DEFAULT_BLOCK_CHARS): { keys: BlockKey[]; state: BlockKeyerState } {
  checkBlockChars(blockChars);
  const chainer = new CanonicalStream(blockChars);
  feedMessages(chainer, messages, 0);
  const keys = chainer.keys();
  return { keys, state: keyerState("chat", blockChars, keys, chainer, CHAIN_ORIGIN, 0, messages.length) };
}

/**
 * Keys of the blocks that `appended` messages complete after a chat keyed into `state`: exactly
 * chatBlockKeys([...messages, ...appended]).slice(state.blocks), at the cost of the appended text
 * only. The open tail is re-fed piece by piece, so its canonical bytes are unchanged.
 */
export function continueChatBlockKeys(state: BlockKeyerState, appended: readonly ChatMessageLike[]): { keys: BlockKey[]; state: BlockKeyerState } {
  checkState(state, "chat");
  const chainer = new CanonicalStream(state.blockChars);
  for (const piece of state.tail) chainer.write(piece);
  feedMessages(chainer, appended, state.messages);
  const keys = chainer.keys(state.lastKey);
  return { keys, state: keyerState("chat", state.blockChars, keys, chainer, state.lastKey, state.blocks, state.messages + appended.length) };
}

/** Characters the canonical chat serialisation has (for token estimation), counted the same way
 * chatBlockKeys feeds them; no allocation. Malformed parts count as 0 (chatBlockKeys rejects them). */
export function chatSerialisedLength(messages: readonly ChatMessageLike[]): number {
  let total = 0;
  for (const message of messages) {
    total += (typeof message.role === "string" ? message.role.length : 0) + ROLE_SEPARATOR.length + MESSAGE_SEPARATOR.length;
    const content = message.content;
    if (typeof content === "string") {
      total += content.length;
      continue;
    }
    if (!Array.isArray(content)) continue;
    for (const part of content as unknown[]) {
      if (typeof part === "string") total += part.length;
      else if (part && typeof part === "object") {
        const record = part as { type?: unknown; text?: unknown; image_url?: unknown };
        if (typeof record.text === "string") total += record.text.length;
        else if (record.type === "image_url") {
          const image = record.image_url;
          const url = typeof image === "string" ? image : image && typeof image === "object" ? (image as { url?: unknown }).url : undefined;
          if (typeof url === "string") total += PART_SEPARATOR.length + url.length;
        }
      }
    }
  }
  return total;
}
