// The OpenAI request shape, checked at the LB so that what no engine should see never reaches one:
// a 400 in OpenAI's own words (its messages, `param` and `code`), not an engine crash or a retry on a
// second replica. It checks the fields the LB itself reads (model, messages or prompt, stream,
// stream_options, user) and the common fields whose type and range OpenAI fixes; unknown fields pass
// through untouched (engines have their own extensions: top_k, chat_template_kwargs, ...), bounded by
// the depth limit (json-depth.ts). It reads the parsed body once, field by field: no schema library
// on the hot path (a zod parse of a small chat body costs twice its JSON.parse).
//
// `n` follows OpenAI, vLLM and SGLang, which all sample n choices from one prompt: an integer from 1
// to 128 (OpenAI's bound) goes through to the replica, which may still refuse what it does not
// support, in its own 400.
import { isTokenIds } from "./embedding-input";
import { badRequest, type HttpError } from "./errors";
import { isRecord } from "./is-record";

/** The roles OpenAI's chat API accepts, in the order its error message lists them. */
const CHAT_ROLES: readonly string[] = ["system", "assistant", "user", "function", "tool", "developer"];
/** Roles whose message may have no content (tool calls, function calls). */
const CONTENT_OPTIONAL_ROLES: ReadonlySet<string> = new Set(["assistant", "function"]);
/** OpenAI's upper bound on `n`. */
const MAX_CHOICES = 128;

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "decimal";
  return typeof value;
}

const invalidType = (param: string, expected: string, value: unknown): HttpError =>
  badRequest(`Invalid type for '${param}': expected ${expected}, but got ${typeName(value)} instead.`, param, "invalid_type");
const missing = (param: string): HttpError => badRequest(`Missing required parameter: '${param}'.`, param, "missing_required_parameter");

function outOfRange(param: string, integer: boolean, value: number, bound: number, above: boolean): HttpError {
  const kind = integer ? "integer" : "decimal";
  const relation = above ? "above maximum" : "below minimum";
  return badRequest(
    `Invalid '${param}': ${kind} ${relation} value. Expected a value ${above ? "<=" : ">="} ${bound}, but got ${value} instead.`,
    param,
    `${kind}_${above ? "above_max" : "below_min"}_value`,
  );
}

/** An optional number field (null allowed), an integer when `integer`, within [min, max]. */
function checkNumber(body: Record<string, unknown>, param: string, integer: boolean, min: number, max: number): void {
  const value = body[param];
  if (value === undefined || value === null) return;
  if (typeof value !== "number" || (integer && !Number.isInteger(value))) throw invalidType(param, integer ? "an integer" : "a number", value);
  if (value < min) throw outOfRange(param, integer, value, min, false);
  if (value > max) throw outOfRange(param, integer, value, max, true);
}

function checkOptional(body: Record<string, unknown>, param: string, expected: string, ok: (value: unknown) => boolean): void {
  const value = body[param];
  if (value !== undefined && value !== null && !ok(value)) throw invalidType(param, expected, value);
}

const isString = (value: unknown): boolean => typeof value === "string";
const isStringArray = (value: unknown): boolean => Array.isArray(value) && value.every(isString);

/** Throws a 400 naming the first field that breaks OpenAI's request shape. */
export function checkRequestShape(kind: "chat" | "completion" | "embedding", body: Record<string, unknown>): void {
  const model = body["model"];
  if (model !== undefined && (typeof model !== "string" || model === "")) {
    throw model === "" ? badRequest("Invalid 'model': empty string.", "model", "invalid_value") : invalidType("model", "a string", model);
  }
  checkOptional(body, "stream", "a boolean", (value) => typeof value === "boolean");
  checkOptional(body, "stream_options", "an object", isRecord);
  const streamOptions = body["stream_options"];
  if (isRecord(streamOptions)) {
    const includeUsage = streamOptions["include_usage"];
    if (includeUsage !== undefined && includeUsage !== null && typeof includeUsage !== "boolean") {
      throw invalidType("stream_options.include_usage", "a boolean", includeUsage);
    }
  }
  checkOptional(body, "user", "a string", isString);
  // A completion may ask for no tokens at all: with `echo` it scores the prompt (its logprobs), what
  // eval harnesses and rerankers do; OpenAI's minimum there is 0 (its error reads "Expected a value
  // >= 0") and vLLM serves it (echo_without_generation). A chat turn needs at least one token (vLLM
  // refuses max_tokens 0 there).
  checkNumber(body, "max_tokens", true, kind === "completion" ? 0 : 1, Number.MAX_SAFE_INTEGER);
  checkNumber(body, "max_completion_tokens", true, 1, Number.MAX_SAFE_INTEGER);
  checkNumber(body, "n", true, 1, MAX_CHOICES);
  checkNumber(body, "temperature", false, 0, 2);
  checkNumber(body, "top_p", false, 0, 1);
  checkNumber(body, "presence_penalty", false, -2, 2);
  checkNumber(body, "frequency_penalty", false, -2, 2);
  checkNumber(body, "seed", true, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  checkOptional(body, "stop", "a string or an array of strings", (value) => isString(value) || isStringArray(value));
  if (kind === "chat") {
    checkMessages(body["messages"]);
    // The chat template renders the tools into the prompt; the LB counts and keys them (keys/chat.ts).
    checkOptional(body, "tools", "an array", Array.isArray);
    // vLLM's `documents` are rendered by RAG chat templates: counted and keyed as well.
    checkOptional(body, "documents", "an array", Array.isArray);
  }
  if (kind === "completion") checkPrompt(body["prompt"]);
  // An embedding's `input` is checked where it is read (embedding-input.ts).
}

function checkMessages(messages: unknown): void {
  if (messages === undefined) throw missing("messages");
  if (!Array.isArray(messages)) throw invalidType("messages", "an array", messages);
  if (messages.length === 0) {
    throw badRequest("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", "messages", "empty_array");
  }
  for (let i = 0; i < messages.length; i++) {
    const message: unknown = messages[i];
    const at = `messages[${i}]`;
    if (!isRecord(message)) throw invalidType(at, "an object", message);
    const role = message["role"];
    if (role === undefined) throw missing(`${at}.role`);
    if (typeof role !== "string") throw invalidType(`${at}.role`, "a string", role);
    if (!CHAT_ROLES.includes(role)) {
      const supported = CHAT_ROLES.map((r) => `'${r}'`);
      throw badRequest(
        `Invalid value: '${role}'. Supported values are: ${supported.slice(0, -1).join(", ")}, and ${supported.at(-1) ?? ""}.`,
        `${at}.role`,
        "invalid_value",
      );
    }
    checkContent(message["content"], `${at}.content`, CONTENT_OPTIONAL_ROLES.has(role));
    const name = message["name"];
    if (name !== undefined && typeof name !== "string") throw invalidType(`${at}.name`, "a string", name);
  }
}

function checkContent(content: unknown, at: string, optional: boolean): void {
  if (content === undefined || content === null) {
    if (optional) return;
    throw content === undefined ? missing(at) : invalidType(at, "one of a string or array of objects", content);
  }
  if (typeof content === "string") return;
  if (!Array.isArray(content)) throw invalidType(at, "one of a string or array of objects", content);
  if (content.length === 0) {
    throw badRequest(`Invalid '${at}': empty array. Expected an array with minimum length 1, but got an empty array instead.`, at, "empty_array");
  }
  for (let p = 0; p < content.length; p++) {
    const part: unknown = content[p];
    const partAt = `${at}[${p}]`;
    if (!isRecord(part)) throw invalidType(partAt, "an object", part);
    const type = part["type"];
    if (type === undefined) throw missing(`${partAt}.type`);
    if (typeof type !== "string") throw invalidType(`${partAt}.type`, "a string", type);
    if (type === "text" && typeof part["text"] !== "string") {
      throw part["text"] === undefined ? missing(`${partAt}.text`) : invalidType(`${partAt}.text`, "a string", part["text"]);
    }
  }
}

/** OpenAI's four prompt forms: a string, strings, token ids, arrays of token ids (each array non-empty). */
function checkPrompt(prompt: unknown): void {
  if (prompt === undefined) throw missing("prompt");
  if (typeof prompt === "string") return;
  if (Array.isArray(prompt) && prompt.length > 0 && (isStringArray(prompt) || isTokenIds(prompt) || prompt.every(isTokenIds))) return;
  throw invalidType("prompt", "a string, an array of strings, an array of token ids or a non-empty array of such arrays", prompt);
}
