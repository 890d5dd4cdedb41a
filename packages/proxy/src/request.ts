// Reading and understanding an inference request, once: body under the size limit, JSON, the fields
// routing needs (messages or prompt, model, stream, session), and the upstream body with usage
// requested on streams. Token counts are estimated from characters; nothing is tokenized here.
import type { IncomingMessage } from "node:http";
import { StringDecoder } from "node:string_decoder";
import {
  chatBlockKeys,
  chatBlockKeysWithState,
  chatSerialisedLength,
  continueChatBlockKeys,
  continuePromptBlockKeys,
  DEFAULT_BLOCK_CHARS,
  promptBlockKeys,
  promptBlockKeysWithState,
  type BlockKeyerState,
  RoutingInputError,
  sessionKeyFromBlocks,
  type BlockKey,
} from "@meridian/routing";
import { embeddingInput } from "./embedding-input";
import { badRequest, HttpError } from "./errors";
import { isRecord } from "./sse";

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
  messages: ChatMessage[] | null;
  prompt: string | null;
  keys: BlockKey[];
  /** Where keying the prompt stopped, so the next turn (prompt + reply) is keyed from the reply alone. */
  keyerState?: BlockKeyerState;
  /** Characters of the canonical prompt, the basis of the token estimate. */
  promptChars: number;
  sessionKey: string;
}

/** The request body as its socket chunks, refusing (413) past `limitBytes`. */
export function readBodyParts(req: IncomingMessage, limitBytes: number): Promise<Buffer[]> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limitBytes) {
    return Promise.reject(tooLarge(limitBytes));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on("data", (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limitBytes) {
        failed = true;
        chunks.length = 0;
        reject(tooLarge(limitBytes));
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (!failed) resolve(chunks);
    });
    req.on("error", (error) => {
      if (!failed) reject(error);
      failed = true;
    });
    // A client that hangs up mid-body gets no answer; stop waiting for the rest of it.
    req.on("close", () => {
      if (!failed && !req.complete) {
        failed = true;
        reject(new HttpError(400, "client closed the connection before sending the whole body", "invalid_request_error", "incomplete_body"));
      }
    });
  });
}

export async function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const parts = await readBodyParts(req, limitBytes);
  return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
}

function tooLarge(limitBytes: number): HttpError {
  return new HttpError(413, `request body exceeds the limit of ${limitBytes} bytes`, "invalid_request_error", "request_too_large");
}

function decodeUtf8(parts: readonly Buffer[]): string {
  if (parts.length === 1) return (parts[0] as Buffer).toString("utf8");
  // The decoder carries a multi-byte character split across two socket chunks.
  const decoder = new StringDecoder("utf8");
  let text = "";
  for (const part of parts) text += decoder.write(part);
  return text + decoder.end();
}

export function parseJsonBody(raw: Buffer | readonly Buffer[]): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.isBuffer(raw) ? raw.toString("utf8") : decodeUtf8(raw));
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

export function parseInference(kind: InferenceKind, received: Buffer | Buffer[], sessionHeader: string | undefined, sessionKeyBlocks: number): ParsedInference {
  const raw = Buffer.isBuffer(received) ? [received] : received;
  const body = parseJsonBody(raw);
  const modelField = body["model"];
  if (modelField !== undefined && (typeof modelField !== "string" || modelField === "")) {
    throw badRequest("'model' must be a non-empty string", "model", "invalid_type");
  }
  const stream = body["stream"] === true;
  const streamOptions = body["stream_options"];
  const clientWantsUsage = stream && isRecord(streamOptions) && streamOptions["include_usage"] === true;
  let messages: ChatMessage[] | null = null;
  let prompt: string | null = null;
  let keys: BlockKey[];
  let keyerState: BlockKeyerState;
  let promptChars: number;
  if (kind === "chat") {
    const field = body["messages"];
    if (!Array.isArray(field) || field.length === 0) {
      throw badRequest("'messages' is required and must be a non-empty array", "messages", field === undefined ? "missing_required_parameter" : "invalid_type");
    }
    field.forEach((message: unknown, i) => {
      if (!isRecord(message) || typeof message["role"] !== "string") {
        throw badRequest(`messages[${i}] must be an object with a string 'role'`, `messages[${i}].role`, "invalid_type");
      }
    });
    messages = field as ChatMessage[];
    ({ keys, state: keyerState } = keysOrBadRequest(() => chatBlockKeysWithState(messages as ChatMessage[])));
    promptChars = chatSerialisedLength(messages);
  } else if (kind === "embedding") {
    const input = embeddingInput(body);
    prompt = input.text;
    ({ keys, state: keyerState } = keysOrBadRequest(() => promptBlockKeysWithState(input.text)));
    promptChars = input.promptChars;
  } else {
    const field = body["prompt"];
    // A batch prompt (array) is routed by its first element: the batch shares one replica.
    const text = typeof field === "string" ? field : Array.isArray(field) && typeof field[0] === "string" ? field.join("") : null;
    if (text === null) {
      throw badRequest(
        "'prompt' is required and must be a string or an array of strings",
        "prompt",
        field === undefined ? "missing_required_parameter" : "invalid_type",
      );
    }
    prompt = text;
    ({ keys, state: keyerState } = keysOrBadRequest(() => promptBlockKeysWithState(text)));
    promptChars = text.length;
  }
  const user = body["user"];
  const sessionKey =
    typeof user === "string" && user !== ""
      ? `user:${user}`
      : sessionHeader
        ? `session:${sessionHeader}`
        : sessionKeyFromBlocks(keys, sessionKeyBlocks) || `chars:${promptChars}`;
  return {
    kind,
    raw,
    rawLength: bodyLength(raw),
    body,
    model: typeof modelField === "string" ? modelField : null,
    stream,
    clientWantsUsage,
    messages,
    prompt,
    keys,
    keyerState,
    promptChars,
    sessionKey,
  };
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
 * characters of reply; the keys equal re-keying the whole conversation (keys.test.ts). */
export function nextTurnKeys(request: ParsedInference, reply: string): BlockKey[] | null {
  // An embedding has no reply: its prompt, learned at headers, is all the next request can reuse.
  if (request.kind === "embedding") return null;
  // Chat serialisation adds `role ␟ content ␞` per message (chatSerialisedLength's +2).
  const added = request.messages !== null ? ASSISTANT_ROLE.length + 2 + reply.length : reply.length;
  if (Math.floor((request.promptChars + added) / DEFAULT_BLOCK_CHARS) <= request.keys.length) return null;
  const state = request.keyerState;
  if (state !== undefined) {
    const more =
      request.messages !== null ? continueChatBlockKeys(state, [{ role: ASSISTANT_ROLE, content: reply }]).keys : continuePromptBlockKeys(state, reply).keys;
    return more.length === 0 ? null : request.keys.concat(more);
  }
  return request.messages !== null
    ? chatBlockKeys([...request.messages, { role: ASSISTANT_ROLE, content: reply }])
    : promptBlockKeys((request.prompt ?? "") + reply);
}
