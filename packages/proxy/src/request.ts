// Reading and understanding an inference request, once: body under the size limit, JSON, the fields
// routing needs (messages or prompt, model, stream, session), and the upstream body with usage
// requested on streams. Token counts are estimated from characters; nothing is tokenized here.
import type { IncomingMessage } from "node:http";
import {
  type AssistantToolCall,
  chatBlockKeys,
  chatBlockKeysWithState,
  chatPromptSize,
  chatSerialisedLength,
  chatSessionKey,
  continueChatBlockKeys,
  continuePromptBlockKeys,
  DEFAULT_BLOCK_CHARS,
  promptBlockKeys,
  promptBlockKeysWithState,
  type BlockKeyerState,
  type ChatPreamble,
  type ChatPromptExtras,
  RoutingInputError,
  sessionKeyFromBlocks,
  type BlockKey,
} from "@meridian/routing";
import type { LbConfig } from "@meridian/protocol";
import { sha256Hex } from "@meridian/protocol/credentials";
import { embeddingInput, type PromptSize, textSize, tokenIdPrompt } from "./embedding-input";
import { badRequest, HttpError } from "./errors";
import { PRESCAN_MIN_BYTES, rawNestsDeeperThan, valueNestsDeeperThan } from "./json-depth";
import { rawTooWide } from "./json-width";
import { checkRequestShape } from "./openai-shape";
import { isRecord } from "./is-record";

export type InferenceKind = "chat" | "completion" | "embedding";

export interface ChatMessage {
  role: string;
  content: unknown;
}

export interface ParsedInference {
  kind: InferenceKind;
  /** The client's body as received: socket chunks, never concatenated (an 80 KB copy is not free). */
  raw: Buffer[];
  rawLength: number;
  body: Record<string, unknown>;
  model: string | null;
  stream: boolean;
  /** The client asked for the usage chunk itself (stream_options.include_usage). */
  clientWantsUsage: boolean;
  /** max_completion_tokens, else max_tokens; null when neither is set. */
  maxOutputTokens: number | null;
  messages: ChatMessage[] | null;
  /** What a chat's template renders besides its messages (`tools`, `documents`): counted and keyed
   * with them, and again when the next turn is keyed from scratch. */
  extras: ChatPromptExtras;
  /** The (first) text prompt; null for a chat, and for a token-id prompt, which no reply text extends. */
  prompt: string | null;
  /** A completion with `echo`: its reply text starts with the prompt (OpenAI, vLLM). */
  echo: boolean;
  keys: BlockKey[];
  /** Where keying the prompt stopped, so the next turn (prompt + reply) is keyed from the reply alone. */
  keyerState?: BlockKeyerState;
  /** Characters of the canonical prompt (a batch: of all its prompts) as keyed. */
  promptChars: number;
  /** Its size as admission reads it: characters, or a token-id prompt's tokens (embedding-input.ts). */
  size: PromptSize;
  sessionKey: string;
}

/** The request body as its socket chunks, refusing (413) past `limitBytes`, and (408) when it is
 * not all in within `deadlineMs`: a client that sends headers and then a trickle, or a chunk size it
 * never fills, must not hold a socket and a buffer forever. */
function readBodyParts(req: IncomingMessage, limitBytes: number, deadlineMs?: number): Promise<Buffer[]> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limitBytes) {
    return Promise.reject(tooLarge(limitBytes));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    const fail = (error: unknown): void => {
      if (failed) return;
      failed = true;
      chunks.length = 0;
      if (timer) clearTimeout(timer);
      reject(error);
    };
    const timer = deadlineMs === undefined ? null : setTimeout(() => fail(bodyTimeout(deadlineMs)), deadlineMs);
    req.on("data", (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limitBytes) return fail(tooLarge(limitBytes));
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (failed) return;
      if (timer) clearTimeout(timer);
      resolve(chunks);
    });
    req.on("error", fail);
    // A client that hangs up mid-body gets no answer; stop waiting for the rest of it.
    req.on("close", () => {
      if (!req.complete) fail(new HttpError(400, "client closed the connection before sending the whole body", "invalid_request_error", "incomplete_body"));
    });
  });
}

function bodyTimeout(deadlineMs: number): HttpError {
  return new HttpError(408, `the request body was not received within ${deadlineMs} ms`, "invalid_request_error", "request_timeout", null, {
    connection: "close",
  });
}

/** Reads one inference request's body and parses it under the LB's limits (refusals: HttpError).
 * `checkPromptSize` throws for a prompt too long to admit, before it is keyed. */
export async function readInference(
  kind: InferenceKind,
  req: IncomingMessage,
  config: Pick<LbConfig, "limits" | "sessionKeyBlocks">,
  checkPromptSize: (size: PromptSize) => void,
): Promise<ParsedInference> {
  const { limits } = config;
  const raw = await readBodyParts(req, limits.maxBodyBytes, limits.clientBodyTimeoutMs);
  const session = req.headers["x-session-id"];
  return parseInference(kind, raw, typeof session === "string" ? session : undefined, config.sessionKeyBlocks, {
    maxJsonDepth: limits.maxJsonDepth,
    checkPromptSize,
  });
}

export async function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const parts = await readBodyParts(req, limitBytes);
  return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
}

function tooLarge(limitBytes: number): HttpError {
  return new HttpError(413, `request body exceeds the limit of ${limitBytes} bytes`, "invalid_request_error", "request_too_large");
}

/**
 * The body as text, refused when it is not UTF-8 (JSON's encoding, RFC 8259 §8.1). A lenient decode
 * put U+FFFD where the bytes were invalid, so the LB keyed and sized one text while the engine got
 * the raw bytes (or the replacements, when the body was re-serialised). `ignoreBOM` keeps a byte order
 * mark in the text, where JSON.parse refuses it, as it did before.
 */
function decodeUtf8(parts: readonly Buffer[]): string {
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  try {
    // `stream` carries a multi-byte character split across two socket chunks.
    let text = "";
    for (const part of parts) text += decoder.decode(part, { stream: true });
    return text + decoder.decode();
  } catch {
    throw badRequest("request body is not valid UTF-8", null, "invalid_json");
  }
}

export function parseJsonBody(raw: Buffer | readonly Buffer[]): Record<string, unknown> {
  const text = decodeUtf8(Buffer.isBuffer(raw) ? [raw] : raw);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw badRequest(`request body is not valid JSON (${cause instanceof Error ? cause.message : String(cause)})`, null, "invalid_json");
  }
  if (!isRecord(value)) throw badRequest("request body must be a JSON object", null, "invalid_json");
  return value;
}

function keysOrBadRequest<T>(compute: () => T): T {
  try {
    return compute();
  } catch (error) {
    if (error instanceof RoutingInputError) throw badRequest(error.message, error.field, "invalid_value");
    throw error;
  }
}

/** What parseInference checks beyond the shape: the nesting bound, and the prompt's size before it
 * is keyed (a prompt too long to admit is refused without hashing megabytes of it). */
export interface InferenceLimits {
  maxJsonDepth: number;
  /** Throws (an HttpError) when a prompt of this size may not be admitted. */
  checkPromptSize?: (size: PromptSize) => void;
}

const DEFAULT_INFERENCE_LIMITS: InferenceLimits = { maxJsonDepth: 64 };

function tooDeep(maxJsonDepth: number): HttpError {
  return badRequest(`request body nests arrays and objects more than ${maxJsonDepth} levels deep`, null, "nesting_too_deep");
}

export function parseInference(
  kind: InferenceKind,
  received: Buffer | Buffer[],
  sessionHeader: string | undefined,
  sessionKeyBlocks: number,
  limits: InferenceLimits = DEFAULT_INFERENCE_LIMITS,
): ParsedInference {
  const raw = Buffer.isBuffer(received) ? [received] : received;
  const rawLength = bodyLength(raw);
  // A nesting bomb large enough to be costly to parse is refused unparsed (json-depth.ts).
  const prescanned = rawLength >= PRESCAN_MIN_BYTES;
  if (prescanned && rawNestsDeeperThan(raw, limits.maxJsonDepth)) throw tooDeep(limits.maxJsonDepth);
  // Below PRESCAN_MIN_BYTES a body holds too few values to cost much (json-width.ts).
  const tooWide = prescanned ? rawTooWide(raw) : null;
  if (tooWide !== null) throw badRequest(`request body holds ${tooWide}: not an inference request the LB parses`, null, "body_too_wide");
  const body = parseJsonBody(raw);
  if (!prescanned && valueNestsDeeperThan(body, limits.maxJsonDepth)) throw tooDeep(limits.maxJsonDepth);
  checkRequestShape(kind, body);
  const modelField = body["model"];
  const stream = body["stream"] === true;
  const streamOptions = body["stream_options"];
  const clientWantsUsage = stream && isRecord(streamOptions) && streamOptions["include_usage"] === true;
  const maxOutput = body["max_completion_tokens"] ?? body["max_tokens"];
  let messages: ChatMessage[] | null = null;
  let extras: ChatPromptExtras = {};
  let prompt: string | null = null;
  let keys: BlockKey[];
  let keyerState: BlockKeyerState;
  let preamble: ChatPreamble | undefined;
  let promptChars: number;
  let size: PromptSize;
  if (kind === "chat") {
    messages = body["messages"] as ChatMessage[];
    // What the template renders besides the messages. Not `response_format` (guided decoding
    // constrains the output, the prompt is the same), nor `chat_template_kwargs` (see ChatPromptExtras).
    extras = { tools: body["tools"], documents: body["documents"] };
    const counted = chatPromptSize(messages, extras);
    promptChars = counted.chars;
    size = textSize(promptChars, counted.mediaParts);
    limits.checkPromptSize?.(size);
    ({ keys, state: keyerState, preamble } = keysOrBadRequest(() => chatBlockKeysWithState(messages as ChatMessage[], DEFAULT_BLOCK_CHARS, extras)));
  } else if (kind === "embedding") {
    const input = embeddingInput(body);
    prompt = input.text;
    ({ promptChars, size } = input);
    limits.checkPromptSize?.(size);
    ({ keys, state: keyerState } = keysOrBadRequest(() => promptBlockKeysWithState(input.text)));
  } else {
    const ids = tokenIdPrompt(body["prompt"]);
    if (ids !== null) {
      // Token ids (embedding-input.ts): keyed 4 characters an id, counted as tokens, a batch by its first prompt.
      ({ promptChars, size } = ids);
      limits.checkPromptSize?.(size);
      ({ keys, state: keyerState } = keysOrBadRequest(() => promptBlockKeysWithState(ids.text)));
    } else {
      const field = body["prompt"] as string | string[];
      // A batch (an array, non-empty: openai-shape.ts) goes to one replica, which prefills each prompt on
      // its own: it is keyed by its first prompt, the cache it can reuse and leaves (its choice 0 is that
      // prompt's reply, so next-turn learning holds too). Keyed as the concatenation, the LB learned
      // blocks straddling two prompts that no engine held. Its size is all the prompts' (load, limit).
      const text = typeof field === "string" ? field : (field[0] as string);
      prompt = text;
      promptChars = typeof field === "string" ? text.length : field.reduce((sum, one) => sum + one.length, 0);
      size = textSize(promptChars);
      limits.checkPromptSize?.(size);
      ({ keys, state: keyerState } = keysOrBadRequest(() => promptBlockKeysWithState(text)));
    }
  }
  const user = body["user"];
  const sessionKey =
    typeof user === "string" && user !== ""
      ? boundedSessionKey("user", user)
      : sessionHeader
        ? boundedSessionKey("session", sessionHeader)
        : derivedSessionKey(messages, extras, keys, preamble, sessionKeyBlocks) || `chars:${promptChars}`;
  return {
    kind,
    raw,
    rawLength,
    body,
    model: typeof modelField === "string" ? modelField : null,
    stream,
    clientWantsUsage,
    maxOutputTokens: typeof maxOutput === "number" ? maxOutput : null,
    messages,
    extras,
    prompt,
    echo: kind === "completion" && body["echo"] === true,
    keys,
    keyerState,
    promptChars,
    size,
    sessionKey,
  };
}

/** The session key of a request that names none. A chat's is the first sessionKeyBlocks blocks of
 * its preamble (system prompt and tools, or tools and a leading developer message) and of its first
 * message after the leading system and developer messages, which its later turns repeat (chatSessionKey): keyed by its first blocks, every conversation behind one long system prompt was
 * one session, and a short first turn changed session at turn 2. A prompt's is its first blocks. */
function derivedSessionKey(
  messages: ChatMessage[] | null,
  extras: ChatPromptExtras,
  keys: BlockKey[],
  preamble: ChatPreamble | undefined,
  sessionKeyBlocks: number,
): string {
  if (messages === null || preamble === undefined) return sessionKeyFromBlocks(keys, sessionKeyBlocks);
  // From the keying just done: the messages are well formed, and the preamble is not read again.
  return chatSessionKey(messages, extras, sessionKeyBlocks, DEFAULT_BLOCK_CHARS, { keys, preamble });
}

/** Client-chosen session ids longer than this are keyed by their digest. */
export const SESSION_ID_MAX_CHARS = 256;

/** A session key stays with the request's telemetry event (a ring of thousands of them) and goes to
 * the console, so a client's id (a `user` field may be megabytes) is kept only when short; a longer
 * one is replaced by its SHA-256, the same for the same id, so its conversation still sticks. */
function boundedSessionKey(prefix: "user" | "session", id: string): string {
  return id.length <= SESSION_ID_MAX_CHARS ? `${prefix}:${id}` : `${prefix}:sha256:${sha256Hex(id)}`;
}

function firstNonSpaceByte(parts: readonly Buffer[]): number | undefined {
  for (const bytes of parts) {
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i] as number;
      if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) return byte;
    }
  }
  return undefined;
}

const INCLUDE_USAGE_PREFIX = Buffer.from('{"stream_options":{"include_usage":true},');

/**
 * The body sent upstream, as one buffer or as parts sent back to back. On a stream where the client
 * did not ask for usage, usage is requested anyway (the LB measures cached tokens and calibrates its
 * token estimate from it). When the client sent no stream_options at all the field is spliced in
 * front of the raw bytes as a separate part, so an 80 KB prompt is neither re-serialised nor copied;
 * otherwise the parsed body is re-serialised.
 */
export function upstreamBody(request: ParsedInference): Buffer | Buffer[] {
  const raw = request.raw.length === 1 ? (request.raw[0] as Buffer) : request.raw;
  if (!request.stream || request.clientWantsUsage) return raw;
  if (request.body["stream_options"] === undefined) {
    // The body parsed as an object, so its first non-space byte is "{": splice right after it.
    const at = request.raw.findIndex((part) => part.indexOf(0x7b) >= 0);
    const part = request.raw[at];
    if (part) {
      const rest = [part.subarray(part.indexOf(0x7b) + 1), ...request.raw.slice(at + 1)];
      // An empty object "{}" cannot be a stream request, but keep the splice valid regardless.
      if (firstNonSpaceByte(rest) !== 0x7d) return [INCLUDE_USAGE_PREFIX, ...rest];
    }
  }
  const streamOptions = isRecord(request.body["stream_options"]) ? request.body["stream_options"] : {};
  return Buffer.from(JSON.stringify({ ...request.body, stream_options: { ...streamOptions, include_usage: true } }));
}

export function bodyLength(body: Buffer | readonly Buffer[]): number {
  return Array.isArray(body) ? body.reduce((total, part) => total + part.length, 0) : body.length;
}

const ASSISTANT_ROLE = "assistant";

/** Keys of prompt + assistant reply as the next turn presents them, or null when the reply completes
 * no new block (the prompt's keys, already learned, are the next turn's). From the prompt's keyer
 * state only the reply is hashed, so an 80 KB prompt is not re-keyed to learn a few hundred
 * characters of reply; the keys equal re-keying the whole conversation (keys.test.ts). A chat reply's
 * `toolCalls` (an agent's turn) join its assistant message as the client sends it back. */
export function nextTurnKeys(request: ParsedInference, answer: string, toolCalls: readonly AssistantToolCall[] = []): BlockKey[] | null {
  // An embedding has no reply: its prompt, learned at headers, is all the next request can reuse.
  // A token-id prompt is continued in ids the LB cannot relate to the reply's text.
  if (request.kind === "embedding" || (request.kind === "completion" && request.prompt === null)) return null;
  const reply = request.echo ? unechoed(request.prompt ?? "", answer) : answer;
  const assistant = request.messages !== null ? assistantMessage(reply, toolCalls) : null;
  // Chat serialisation adds `role ␟ content ␞` per message, and the tool calls (chatSerialisedLength).
  const added = assistant !== null ? chatSerialisedLength([assistant]) : reply.length;
  if (Math.floor((request.promptChars + added) / DEFAULT_BLOCK_CHARS) <= request.keys.length) return null;
  const state = request.keyerState;
  if (state !== undefined) {
    const more = assistant !== null ? continueChatBlockKeys(state, [assistant]).keys : continuePromptBlockKeys(state, reply).keys;
    return more.length === 0 ? null : request.keys.concat(more);
  }
  return request.messages !== null && assistant !== null
    ? chatBlockKeys([...request.messages, assistant], DEFAULT_BLOCK_CHARS, request.extras)
    : promptBlockKeys((request.prompt ?? "") + reply);
}

/** The assistant message the next turn carries. With tool calls, as OpenAI's SDKs send the reply
 * back (the message they were given, or the one they put together from a stream): `content` null
 * when the text is empty, and the calls. The chat keys serialise a null content and "" alike
 * (nothing), so a client that sends "" instead keys the same. */
function assistantMessage(text: string, toolCalls: readonly AssistantToolCall[]): ChatMessage {
  if (toolCalls.length === 0) return { role: ASSISTANT_ROLE, content: text };
  // The deprecated functions API's one call goes back as the message's `function_call`.
  const [first] = toolCalls;
  if (first?.type === "function_call") {
    const legacy: ChatMessage & { function_call: typeof first.function } = {
      role: ASSISTANT_ROLE,
      content: text === "" ? null : text,
      function_call: first.function,
    };
    return legacy;
  }
  const message: ChatMessage & { tool_calls: readonly AssistantToolCall[] } = {
    role: ASSISTANT_ROLE,
    content: text === "" ? null : text,
    tool_calls: toolCalls,
  };
  return message;
}

/** The generated text of an echoed completion: its text is prompt + completion (of a batch, choice 0
 * is the first prompt's), and what the engine caches and a client continuing sends is prompt +
 * completion, not prompt + prompt + completion. A text that does not start with the prompt is not
 * learned beyond the prompt. */
function unechoed(prompt: string, text: string): string {
  return text.startsWith(prompt) ? text.slice(prompt.length) : "";
}
