// The chat keyer: a chat prompt's messages as the canonical serialisation `role ␟ content ␞` per
// message (plus what else a chat template renders: names, tool calls, media; see chatBlockKeys), cut
// into chained block keys (stream.ts), and continued with appended messages (the next turn) from a
// keyer state without re-reading the prompt.
import { RoutingInputError, describe } from "../errors";
import { hashString } from "../hash";
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

/** What a chat request carries besides its messages that the chat template renders into the prompt. */
export interface ChatPromptExtras {
  /** The request's `tools`: vLLM and SGLang hand them to the chat template (Qwen's <tools> block in the
   * system turn, Llama 3.1's JSON in the first user turn, Hermes, Mistral's [AVAILABLE_TOOLS]), so the
   * engine's prompt_tokens count them. `functions` (deprecated) and `response_format` are not: vLLM's
   * chat request has no `functions`, and a response format constrains decoding, not the prompt. */
  tools?: unknown;
  /** The request's `documents` (vLLM): RAG chat templates render them into the prompt (Granite after
   * the system turn, Command R after the conversation), so two requests that differ only in their
   * documents share the engine's cache no further than their system prompt. */
  documents?: unknown;
  // Not keyed: vLLM's `chat_template_kwargs`. The common ones (Qwen3's enable_thinking) change only
  // the generation prompt after the last message, which no key covers; keyed, requests differing in
  // them would share nothing. One that changes the system header (gpt-oss's reasoning_effort) is
  // over-predicted until the engine's cached-token reports correct the index.
}

/** A call the reply made, as the assistant message carries it when a client sends the engine's reply
 * back in the next turn (what the engine generated, arguments as the JSON text it wrote): one of its
 * `tool_calls`, or the one `function_call` of OpenAI's deprecated functions API. */
export type AssistantToolCall = ToolCallEntry | LegacyFunctionCall;

/** An entry of the assistant message's `tool_calls`, in OpenAI's shape. */
interface ToolCallEntry {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** The deprecated functions API's call: the message carries it as `function_call: { name, arguments }`,
 * with no id and no type (`type` here only tells it from a tool call). A reply makes one at most, and
 * no tool calls beside it. */
interface LegacyFunctionCall {
  type: "function_call";
  function: { name: string; arguments: string };
}

/**
 * Characters one non-text content part (an image, audio, a file, a video) stands for in the canonical
 * serialisation: about 1k tokens at 4 characters per token, what engines spend on a typical image
 * (LLaVA 576, Qwen2-VL ~1k for 1024², OpenAI 765 at high detail). The engine's count depends on the
 * media's resolution or duration, not on its bytes: counted as its base64 text, a 600 KB image read
 * as 150k tokens and was refused as too long, and smaller ones inflated every load figure.
 */
export const NON_TEXT_PART_CHARS = 4096;
const MEDIA_FILLER = " ".repeat(NON_TEXT_PART_CHARS);
/** A part's type goes into its label for readability only (the digest identifies it): bounded. */
const MEDIA_TYPE_MAX_CHARS = 32;

/** Where the canonical serialisation goes: the block keyer, a character count, or the session key
 * (session.ts). Media parts are handed over unserialised so that counting them costs nothing (no
 * digest of a 600 KB data URL). */
export interface SerialisationSink {
  text(piece: string): void;
  media(part: Record<string, unknown>, type: string): void;
}

/** JSON with object keys sorted: the same tool call written by two clients serialises the same. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    const fields: string[] = [];
    for (const key of Object.keys(record).sort()) {
      if (record[key] !== undefined) fields.push(`${JSON.stringify(key)}:${canonicalJson(record[key])}`);
    }
    return `{${fields.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * A media part's canonical piece, exactly NON_TEXT_PART_CHARS long: separator, type and a digest of
 * what identifies the media (an image's URL or data URL; for other parts, the part itself), padded.
 * Different media get different keys without putting megabytes of base64 through the keyer, and the
 * padding keeps the keys' depth in step with the tokens the engine spends on it (and with
 * chatSerialisedLength, which next-turn learning and the token estimate rely on).
 */
export function mediaPiece(part: Record<string, unknown>, type: string): string {
  const label = mediaLabel(part, type);
  return label + MEDIA_FILLER.slice(label.length);
}

function mediaLabel(part: Record<string, unknown>, type: string): string {
  const identity = type === "image_url" ? imageUrl(part["image_url"]) : undefined;
  if (identity === undefined) return `${PART_SEPARATOR}${type.slice(0, MEDIA_TYPE_MAX_CHARS)}:${hashString(canonicalJson(part)).toString(36)}`;
  const known = imageLabels.get(part);
  if (known?.url === identity) return known.label;
  const label = `${PART_SEPARATOR}${type.slice(0, MEDIA_TYPE_MAX_CHARS)}:${hashString(identity).toString(36)}`;
  imageLabels.set(part, { url: identity, label });
  return label;
}

/** An image part's label, digested once: the keying pass and the session key (session.ts) both need
 * it, and the digest of an 8 MB data URL costs as much as keying the rest of the prompt. Held by the
 * part object, so it goes with the request's body; only the short label is kept (not the 4 KB
 * piece), and it is used only while the part still holds the URL it was made from. */
const imageLabels = new WeakMap<object, { url: string; label: string }>();

function imageUrl(image: unknown): string | undefined {
  if (typeof image === "string") return image;
  const url = image !== null && typeof image === "object" ? (image as { url?: unknown }).url : undefined;
  return typeof url === "string" ? url : undefined;
}

/** `strict`: malformed input throws a RoutingInputError naming the field (keying); otherwise it is
 * skipped (counting: chatBlockKeys rejects it). */
function serialiseContent(sink: SerialisationSink, content: unknown, index: number, strict: boolean): void {
  if (typeof content === "string") {
    sink.text(content);
    return;
  }
  if (content === null || content === undefined) return; // e.g. assistant tool-call turns
  if (!Array.isArray(content)) {
    if (!strict) return;
    throw new RoutingInputError(`messages[${index}].content`, `must be a string, null or an array of content parts, got ${describe(content)}`);
  }
  for (let p = 0; p < content.length; p++) {
    const part: unknown = content[p];
    if (typeof part === "string") {
      sink.text(part);
      continue;
    }
    if (part === null || typeof part !== "object") {
      if (!strict) continue;
      throw new RoutingInputError(`messages[${index}].content[${p}]`, `must be a content part object, got ${describe(part)}`);
    }
    const record = part as Record<string, unknown>;
    const text = record["text"];
    const type = record["type"];
    if (typeof text === "string") {
      sink.text(text);
    } else if (type === "text") {
      if (strict) throw new RoutingInputError(`messages[${index}].content[${p}].text`, `must be a string, got ${describe(text)}`);
    } else if (typeof type === "string") {
      // An image, audio, a file, a video: the engine encodes it into tokens the prompt's text does not show.
      sink.media(record, type);
    }
  }
}

/** The fields besides `content` that a chat template renders into the prompt, each behind ␝ and its
 * name so that no field can pass for another or for text. reasoning_content is left out: templates
 * of reasoning models drop it from the history. */
function serialiseMessage(sink: SerialisationSink, message: Record<string, unknown>, index: number, strict: boolean): void {
  const name = message["name"];
  if (typeof name === "string" && name !== "") sink.text(`${PART_SEPARATOR}name:${name}`);
  const toolCallId = message["tool_call_id"];
  if (typeof toolCallId === "string" && toolCallId !== "") sink.text(`${PART_SEPARATOR}tool_call_id:${toolCallId}`);
  serialiseContent(sink, message["content"], index, strict);
  const toolCalls = message["tool_calls"];
  if (Array.isArray(toolCalls) && toolCalls.length > 0) sink.text(`${PART_SEPARATOR}tool_calls:${canonicalJson(toolCalls.map(renderedToolCall))}`);
  const functionCall = message["function_call"];
  if (functionCall !== null && typeof functionCall === "object") sink.text(`${PART_SEPARATOR}function_call:${canonicalJson(functionCall)}`);
}

/** What a chat template renders of one tool call: its id, type (OpenAI's only one, "function", when
 * left out) and function name and arguments. Extras a client sends back are dropped: openai-python's
 * stream helper and SGLang keep each call's `index`, which no template renders, and keyed it made the
 * client's next turn miss the keys the LB learned from the reply. Anything else is keyed as sent. */
function renderedToolCall(call: unknown): unknown {
  if (call === null || typeof call !== "object" || Array.isArray(call)) return call;
  const record = call as Record<string, unknown>;
  const fn = record["function"];
  if (fn === null || typeof fn !== "object" || Array.isArray(fn)) return call;
  const { name, arguments: args } = fn as Record<string, unknown>;
  return { id: record["id"], type: record["type"] ?? "function", function: { name, arguments: args } };
}

/**
 * A list the chat template renders into the prompt, as one piece `␝field:json␞` (canonical JSON);
 * nothing for an absent or empty one (templates test `{% if tools %}`). The tools go after a
 * leading system message, ahead of the rest (serialisePrompt): counted, so a 6 KB tool set is not missing from the token estimate (the engine's count
 * then calibrated the LB to ~1 char/token), and keyed, so requests whose tool sets differ do not share
 * keys; they stay the same from turn to turn, so the next turn continues the keys.
 */
function serialiseListField(sink: SerialisationSink, field: "tools" | "documents", list: unknown, strict: boolean): void {
  if (list === undefined || list === null) return;
  if (!Array.isArray(list)) {
    if (!strict) return;
    throw new RoutingInputError(field, `must be an array, got ${describe(list)}`);
  }
  if (list.length > 0) sink.text(`${PART_SEPARATOR}${field}:${canonicalJson(list)}${MESSAGE_SEPARATOR}`);
}

/** The whole prompt: a leading system message, then the tools, then the documents, then the other
 * messages. Templates render the system text first and the tools (Qwen, Granite, Hermes) or the
 * documents (Granite; Command R renders them after the conversation) after it, so requests that share
 * a system prompt share keys up to it and differ from their tools or documents on, never later than
 * the engine's prompt does. Keyed tools-first, two agents with one tool set and different system
 * prompts shared the whole tool block, a cache the engine did not hold. */
function serialisePrompt(
  sink: SerialisationSink,
  messages: readonly ChatMessageLike[],
  extras: ChatPromptExtras,
  strict: boolean,
  afterPreamble?: (next: number) => void,
): void {
  const system = Array.isArray(messages) && isSystemMessage(messages[0]) ? 1 : 0;
  if (system === 1) serialiseMessages(sink, messages.slice(0, 1), 0, strict);
  serialiseListField(sink, "tools", extras.tools, strict);
  // Up to here is the preamble: what every conversation of an app repeats at every turn. Not the
  // documents, which a RAG client retrieves anew for each question.
  afterPreamble?.(system);
  serialiseListField(sink, "documents", extras.documents, strict);
  serialiseMessages(sink, system === 1 ? messages.slice(1) : messages, system, strict);
}

/** Where a chat's preamble (a leading system message and the tools: what every conversation of an
 * app repeats at every turn) ends in its canonical serialisation: what the session key (session.ts)
 * needs of it besides the block keys. */
export interface ChatPreamble {
  /** Its length in units. */
  readonly units: number;
  /** Its pieces (or piece tails) after its last full block. */
  readonly tail: readonly string[];
  /** The index of the first message after it. */
  readonly next: number;
}

function isSystemMessage(message: unknown): boolean {
  return message !== null && typeof message === "object" && (message as { role?: unknown }).role === "system";
}

export function serialiseMessages(sink: SerialisationSink, messages: readonly ChatMessageLike[], firstIndex: number, strict: boolean): void {
  if (!Array.isArray(messages)) {
    if (!strict) return;
    throw new RoutingInputError("messages", `must be an array, got ${describe(messages)}`);
  }
  for (let m = 0; m < messages.length; m++) {
    const i = firstIndex + m;
    const message = messages[m];
    if (message === null || typeof message !== "object") {
      if (!strict) continue;
      throw new RoutingInputError(`messages[${i}]`, `must be an object, got ${describe(message)}`);
    }
    if (typeof message.role === "string") sink.text(message.role);
    else if (strict) throw new RoutingInputError(`messages[${i}].role`, `must be a string, got ${describe(message.role)}`);
    sink.text(ROLE_SEPARATOR);
    serialiseMessage(sink, message as unknown as Record<string, unknown>, i, strict);
    sink.text(MESSAGE_SEPARATOR);
  }
}

function keyerSink(chainer: CanonicalStream): SerialisationSink {
  return {
    text: (piece) => chainer.write(piece),
    media: (part, type) => chainer.write(mediaPiece(part, type)),
  };
}

/**
 * Chained keys of a chat prompt. Canonical serialisation: the tools if any, `␝tools:json␞`, then per
 * message `role ␟ [␝name:…] [␝tool_call_id:…] content [␝tool_calls:json] [␝function_call:json] ␞`
 * with the documents if any, `␝documents:json␞`, after a leading system message (serialisePrompt). An
 * array content contributes its text parts concatenated and each media part as a fixed-length piece
 * behind ␝ (mediaPiece). JSON is canonical (sorted keys). Only full blocks are keyed (see the file header).
 */
export function chatBlockKeys(messages: readonly ChatMessageLike[], blockChars = DEFAULT_BLOCK_CHARS, extras: ChatPromptExtras = {}): BlockKey[] {
  return chatBlockKeysWithState(messages, blockChars, extras).keys;
}

/** chatBlockKeys plus the state continueChatBlockKeys needs to key appended messages, and where the
 * preamble ends (chatSessionKey). */
export function chatBlockKeysWithState(
  messages: readonly ChatMessageLike[],
  blockChars = DEFAULT_BLOCK_CHARS,
  extras: ChatPromptExtras = {},
): { keys: BlockKey[]; state: BlockKeyerState; preamble: ChatPreamble } {
  checkBlockChars(blockChars);
  const chainer = new CanonicalStream(blockChars);
  let preamble: ChatPreamble = { units: 0, tail: [], next: 0 };
  serialisePrompt(keyerSink(chainer), messages, extras, true, (next) => {
    preamble = { units: chainer.length, tail: chainer.tailPieces(), next };
  });
  const keys = chainer.keys();
  return { keys, state: keyerState("chat", blockChars, keys, chainer, CHAIN_ORIGIN, 0, messages.length), preamble };
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
  serialiseMessages(keyerSink(chainer), appended, state.messages, true);
  const keys = chainer.keys(state.lastKey);
  return { keys, state: keyerState("chat", state.blockChars, keys, chainer, state.lastKey, state.blocks, state.messages + appended.length) };
}

/** The canonical chat serialisation's size: its characters (for token estimation), counted by the
 * same walk chatBlockKeys feeds the keyer from (a media part: NON_TEXT_PART_CHARS; the tools;
 * malformed parts count as 0, chatBlockKeys rejects them), and its media parts. The engine spends its
 * own count on a media part, so a prompt with one says nothing of the characters a token of text takes. */
export function chatPromptSize(messages: readonly ChatMessageLike[], extras: ChatPromptExtras = {}): { chars: number; mediaParts: number } {
  const size = { chars: 0, mediaParts: 0 };
  const counter: SerialisationSink = {
    text: (piece) => {
      size.chars += piece.length;
    },
    media: () => {
      size.chars += NON_TEXT_PART_CHARS;
      size.mediaParts++;
    },
  };
  serialisePrompt(counter, messages, extras, false);
  return size;
}

/** Characters the canonical chat serialisation has (chatPromptSize's). */
export function chatSerialisedLength(messages: readonly ChatMessageLike[], extras: ChatPromptExtras = {}): number {
  return chatPromptSize(messages, extras).chars;
}
