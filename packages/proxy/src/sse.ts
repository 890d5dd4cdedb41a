// Watches an OpenAI server-sent-event stream as it passes through the LB. It measures (the first
// generated token, be it content, reasoning or a tool call; output text; usage) without holding the
// stream back. It forwards whole events only: a partial event is held until its terminating blank line
// arrives (never the whole response), so that if the upstream dies mid-stream the LB can still end the
// client's stream with an error event of its own (sseErrorEvent) rather than glue it onto half an
// event. A partial event is held up to MAX_PARTIAL_EVENT_BYTES: past it the observer gives up and the
// exchange fails the stream. When the client asked for usage itself, an upstream chunk that ends on an
// event boundary (the usual case: engines write event by event) is forwarded as is, with no copy;
// otherwise the LB asked for usage on the client's behalf (of a replica or a peer LB alike) and drops
// that extra usage event. A top-level error event (a peer LB that cut the stream, or an engine) marks
// the stream failed (streamError). Lines end as WHATWG SSE allows: CRLF, LF or a bare CR (an event
// ends at an empty line, e.g. "\n\n", "\r\n\r\n", "\r\r").

import { DEFAULT_LIMITS } from "@meridian/protocol";
import type { DecodeSample } from "@meridian/lb-core";
import { type AssistantToolCall, MAX_CHARS_PER_TOKEN, usageNumber } from "@meridian/routing";
import { isRecord } from "./is-record";
import { messageToolCalls, StreamedToolCalls } from "./tool-calls";

export interface UsageReport {
  promptTokens: number | null;
  completionTokens: number | null;
  cachedTokens: number | null;
}

export interface SseObserverOptions {
  /** Drop usage-only events (and the usage field on content events) before they reach the client. */
  stripUsage: boolean;
  /** Called once, when the first generated token goes by: content, reasoning or a tool call in a chat
   * delta, or completion text. */
  onFirstContent: () => void;
  /** The most reply text kept for next-turn learning. A longer reply could not be part of a next
   * prompt the LB admits, and an engine that never stops would otherwise grow the LB's memory by its
   * whole stream. Past it the reply is unknown (`replyTruncated`). Default: maxReplyChars of the
   * default maxPromptTokens. */
  maxReplyChars?: number;
}

/** The longest reply that can still be part of a next prompt the LB admits, at the token estimate's
 * most characters per token. */
export function maxReplyChars(maxPromptTokens: number): number {
  return maxPromptTokens * MAX_CHARS_PER_TOKEN;
}

const DEFAULT_MAX_REPLY_CHARS = maxReplyChars(DEFAULT_LIMITS.maxPromptTokens);

/** The largest partial event the observer holds while waiting for its terminating blank line. An
 * event is one delta (a few tokens; a few KB with logprobs or a tool call's arguments), and even a
 * whole 128 Ki-token reply sent as one event is ~0.5 MiB of JSON: past 4 MiB the engine is not
 * speaking SSE (no blank lines, or an endless event), and holding on would let it grow the LB's
 * memory without bound, several times over (the raw bytes, their UTF-16 text, its join). */
export const MAX_PARTIAL_EVENT_BYTES = 4 * 1024 * 1024;

export class SseObserver {
  /** The first choice's reply text, as next-turn learning reads it. Empty when the reply came with
   * reasoning (reasoningSeen): the next turn is then learned as the prompt alone. */
  content = "";
  /** The first choice carried reasoning (a reasoning parser's `reasoning_content` or `reasoning`). The
   * chat templates of reasoning models (DeepSeek-R1, Qwen3, gpt-oss) drop it from the history, so the
   * engine's cache after the prompt holds reasoning tokens the next prompt does not have: the reply's
   * blocks will not match there, only the prompt's. */
  reasoningSeen = false;
  /** The reply (its text and tool calls) outgrew `maxReplyChars`: `content` holds its start only, and
   * no next turn is learned. */
  replyTruncated = false;
  usage: UsageReport | null = null;
  /** Events carrying output of the first choice: text, reasoning or a call (a count of that choice's
   * tokens when usage is missing; a reply of tool calls alone generates tokens too). */
  contentEvents = 0;
  /** One past the highest choice index seen: how many sequences the engine decoded side by side (n
   * choices, times the prompts of a /v1/completions batch, whose choices are numbered through). */
  private sequences = 1;
  done = false;
  /** The upstream sent a partial event past MAX_PARTIAL_EVENT_BYTES: what was held is dropped and
   * nothing more is read; the exchange fails the stream. */
  tooLarge = false;
  /** The message of a top-level `error` event: the upstream (a peer LB, or an engine) cut the stream
   * short and said so, then ended it cleanly. The stream failed, though its status was 200. */
  streamError: string | null = null;
  /** The text after the last complete event, as decoded piece by piece: joined once, when its
   * event ends, rather than copied on every chunk. */
  private pending: string[] = [];
  /** The last few characters of `pending`, where a boundary split across chunks begins. */
  private pendingTail = "";
  /** The upstream bytes of the partial event (those of `pending`, and any the decoder holds). */
  private partialBytes = 0;
  /** Pass-through mode: the bytes after the last complete event, not forwarded yet, and their last
   * few bytes (a boundary split across chunks). */
  private heldRaw: Buffer[] = [];
  private heldRawTail: Buffer = EMPTY;
  private readonly decoder = new TextDecoder();
  private sawContent = false;
  /** The first choice's tool calls as they stream: an agent's reply is often tool calls alone, which
   * its next turn sends back. Dropped with the text after reasoning. */
  private readonly toolCalls = new StreamedToolCalls();
  /** Everything so far ended with an event whose blank line was a CR, and that event went out (true)
   * or was dropped (false); null otherwise. A LF next is the second half of that CRLF. */
  private endedOnCr: boolean | null = null;

  constructor(private readonly options: SseObserverOptions) {}

  /** Feeds one upstream chunk; returns what to forward to the client now (possibly empty). */
  push(chunk: Buffer): Buffer {
    if (this.tooLarge) return EMPTY;
    const endedOnCr = this.endedOnCr;
    this.endedOnCr = null;
    if (endedOnCr !== null && chunk[0] === LF) {
      // The LF ends the event already sent (or dropped) with its CR: it goes the same way now, rather
      // than wait as the start of the next event.
      const after = chunk.length > 1 ? this.push(chunk.subarray(1)) : EMPTY;
      if (!endedOnCr) return after;
      return after.length === 0 ? LF_BYTE : Buffer.concat([LF_BYTE, after]);
    }
    const decoded = this.decoder.decode(chunk, { stream: true });
    // Only the new text (and the few held characters a boundary could start in) is searched: held
    // text was searched when it came, so a stream without boundaries costs each byte one look.
    if (new EventEnds(this.pendingTail + decoded).next(0) === null) {
      this.hold(decoded, chunk);
      return EMPTY;
    }
    const heldChars = this.pending.reduce((total, piece) => total + piece.length, 0);
    const text = this.pending.length === 0 ? decoded : this.pending.join("") + decoded;
    const keep = this.options.stripUsage ? ([] as string[]) : null;
    let eventStart = 0;
    let searchFrom = Math.max(0, heldChars - BOUNDARY_OVERLAP);
    let lastKept = true;
    const ends = new EventEnds(text);
    for (;;) {
      const boundary = ends.next(Math.max(eventStart, searchFrom));
      if (boundary === null) break;
      const raw = text.slice(eventStart, boundary.end);
      const forward = this.readEvent(text.slice(eventStart, boundary.bodyEnd));
      if (keep) {
        if (forward === true) keep.push(raw);
        else if (typeof forward === "string") keep.push(forward + text.slice(boundary.bodyEnd, boundary.end));
        lastKept = forward !== false;
      }
      eventStart = boundary.end;
      searchFrom = eventStart;
    }
    if (eventStart === text.length && text.charCodeAt(text.length - 1) === CR) this.endedOnCr = lastKept;
    const rest = text.slice(eventStart);
    this.pending = rest === "" ? [] : [rest];
    this.pendingTail = rest.slice(-BOUNDARY_OVERLAP);
    this.partialBytes = Buffer.byteLength(rest);
    const out = keep ? (keep.length === 0 ? EMPTY : Buffer.from(keep.join(""))) : this.completeEvents(chunk);
    if (this.partialBytes > MAX_PARTIAL_EVENT_BYTES + BOUNDARY_OVERLAP) this.giveUp();
    return out;
  }

  /** Whatever is still held at end of stream (an unterminated last event): unchanged when passed
   * through, else kept, dropped or rewritten as a terminated one would be (a usage event the client
   * did not ask for is dropped even when the upstream ended without its blank line). */
  end(): Buffer {
    if (this.tooLarge) return EMPTY;
    const rest = this.pending.join("") + this.decoder.decode();
    this.pending = [];
    this.pendingTail = "";
    const forward = rest.trim() !== "" ? this.readEvent(rest) : true;
    if (!this.options.stripUsage) {
      const held = this.heldRaw.length === 0 ? EMPTY : this.heldRaw.length === 1 ? (this.heldRaw[0] as Buffer) : Buffer.concat(this.heldRaw);
      this.heldRaw = [];
      return held;
    }
    if (forward === false || rest === "") return EMPTY;
    if (forward === true) return Buffer.from(rest);
    // The rewritten event keeps the line ends the upstream sent after it.
    const body = rest.trimEnd();
    return Buffer.from(forward + rest.slice(body.length));
  }

  /** The first choice's tool calls as the next turn sends them back: [] for none, null when they are
   * unknown (a fragment the LB could not place: tool-calls.ts). */
  replyToolCalls(): AssistantToolCall[] | null {
    return this.toolCalls.result();
  }

  /** What the stream generated, for the replica's decode rate: usage's completion tokens (summed over
   * every sequence), or without usage the first choice's content events (one sequence). */
  decodeSample(): DecodeSample {
    const tokens = this.usage?.completionTokens ?? null;
    return tokens !== null ? { outputTokens: tokens, sequences: this.sequences } : { outputTokens: this.contentEvents, sequences: 1 };
  }

  /** A chunk with no event boundary: all of it joins the partial event. */
  private hold(decoded: string, chunk: Buffer): void {
    if (decoded !== "") this.pending.push(decoded);
    this.pendingTail = (this.pendingTail + decoded).slice(-BOUNDARY_OVERLAP);
    this.partialBytes += chunk.length;
    if (!this.options.stripUsage) {
      this.heldRaw.push(chunk);
      this.heldRawTail = lastBytes(this.heldRawTail, chunk);
    }
    // The count may include the start of the terminating blank line: an event of exactly the cap
    // passes however the network splits that line.
    if (this.partialBytes > MAX_PARTIAL_EVENT_BYTES + BOUNDARY_OVERLAP) this.giveUp();
  }

  private giveUp(): void {
    this.tooLarge = true;
    this.pending = [];
    this.pendingTail = "";
    this.heldRaw = [];
    this.heldRawTail = EMPTY;
  }

  /** Pass-through, for a chunk the text says completes an event: the raw bytes up to the last event
   * boundary, holding the rest. Boundaries are ASCII, so cutting the bytes there never splits a UTF-8
   * character; the last one lies in this chunk, or begins in the few held bytes before it. */
  private completeEvents(chunk: Buffer): Buffer {
    let end = lastEventEnd(chunk);
    if (end === 0 && this.heldRawTail.length > 0) {
      const tail = this.heldRawTail;
      end = Math.max(0, lastEventEnd(Buffer.concat([tail, chunk.subarray(0, BOUNDARY_OVERLAP)])) - tail.length);
    }
    if (end === 0) {
      // Cannot happen (the text found a boundary); holding everything is the safe reading.
      this.heldRaw.push(chunk);
      this.heldRawTail = lastBytes(this.heldRawTail, chunk);
      return EMPTY;
    }
    const out = this.heldRaw.length === 0 && end === chunk.length ? chunk : Buffer.concat([...this.heldRaw, chunk.subarray(0, end)]);
    const rest = chunk.subarray(end);
    this.heldRaw = rest.length === 0 ? [] : [rest];
    this.heldRawTail = lastBytes(EMPTY, rest);
    return out;
  }

  /** Returns true to forward the event unchanged, false to drop it, or a rewritten event body. */
  private readEvent(eventText: string): boolean | string {
    let data = "";
    let dataLines = 0;
    for (const clean of eventText.split(LINE_END)) {
      if (!clean.startsWith("data:")) continue;
      const value = clean.charCodeAt(5) === 32 ? clean.slice(6) : clean.slice(5);
      data = dataLines === 0 ? value : data + "\n" + value;
      dataLines++;
    }
    if (dataLines === 0) return true;
    if (data === "[DONE]") {
      this.done = true;
      return true;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return true;
    }
    if (!isRecord(parsed)) return true;
    if (parsed["error"] !== undefined && parsed["error"] !== null) {
      this.streamError = errorMessage(parsed["error"]);
      return true;
    }
    const choices = Array.isArray(parsed["choices"]) ? (parsed["choices"] as unknown[]) : [];
    for (const choice of choices) {
      if (!isRecord(choice)) continue;
      const index = choice["index"];
      // An absurd index only makes the learned rate slower (deadlines more generous): no bound needed.
      if (typeof index === "number" && Number.isSafeInteger(index) && index >= this.sequences) this.sequences = index + 1;
      const delta = isRecord(choice["delta"]) ? choice["delta"] : null;
      // The first generated token of any kind starts the time to first token: text, reasoning, a tool call.
      if (!this.sawContent && (delta ? hasOutput(delta) : nonEmptyString(choice["text"]))) {
        this.sawContent = true;
        this.options.onFirstContent();
      }
      // With n > 1 the choices interleave; the reply the next turn will carry is the first one's text.
      if (choice["index"] !== undefined && choice["index"] !== 0) continue;
      if (delta && hasReasoning(delta)) {
        this.reasoningSeen = true;
        this.content = "";
        this.toolCalls.clear();
      }
      const piece = delta ? delta["content"] : choice["text"];
      const maxChars = this.options.maxReplyChars ?? DEFAULT_MAX_REPLY_CHARS;
      if (nonEmptyString(piece)) {
        if (!this.reasoningSeen) {
          if (!this.replyTruncated && this.content.length + this.toolCalls.chars + piece.length > maxChars) this.replyTruncated = true;
          if (!this.replyTruncated) this.content += piece;
        }
      }
      if (delta ? hasOutput(delta) : nonEmptyString(piece)) this.contentEvents++;
      if (delta && !this.reasoningSeen && !this.replyTruncated) {
        this.toolCalls.add(delta);
        if (this.content.length + this.toolCalls.chars > maxChars) {
          this.replyTruncated = true;
          this.toolCalls.clear();
        }
      }
    }
    const usage = parsed["usage"];
    if (isRecord(usage)) {
      this.usage = readUsage(usage);
      if (this.options.stripUsage) {
        if (choices.length === 0) return false;
        // Some engines attach usage to the last content chunk: keep the content, drop the usage.
        const { usage: _dropped, ...withoutUsage } = parsed;
        return "data: " + JSON.stringify(withoutUsage);
      }
    }
    return true;
  }
}

const EMPTY = Buffer.alloc(0);
/** A boundary ("\r\n\r\n" at most) split across chunks begins in the last 3 characters (or bytes) held. */
const BOUNDARY_OVERLAP = 3;
/** A line end of SSE: CRLF, LF or a bare CR (CRLF first: it is one line end, not two). */
const LINE_END = /\r\n|\r|\n/;
const CR = 0x0d;
const LF = 0x0a;
const LF_BYTE = Buffer.from("\n");

/** The last BOUNDARY_OVERLAP bytes of `held` followed by `chunk`. */
function lastBytes(held: Buffer, chunk: Buffer): Buffer {
  if (chunk.length >= BOUNDARY_OVERLAP) return chunk.subarray(chunk.length - BOUNDARY_OVERLAP);
  return Buffer.concat([held, chunk]).subarray(-BOUNDARY_OVERLAP);
}

/** Index just past the last event boundary in `bytes` (two line ends in a row, each CRLF, LF or
 * CR: the same boundaries EventEnds finds in the text), or 0. Read backwards: the usual chunk ends
 * on its boundary and costs one look. A CR at the very end may yet be the start of a CRLF: the
 * boundary is there either way, and a LF that follows in the next chunk is then an empty line of
 * its own, which an SSE client skips. */
function lastEventEnd(bytes: Buffer): number {
  for (let end = bytes.length; end >= 2; end--) {
    const last = bytes[end - 1];
    if (last === LF) {
      // The second line end is CRLF or LF; the first ends just before it (LF of a CRLF, LF, or CR).
      const start = bytes[end - 2] === CR ? end - 2 : end - 1;
      if (start >= 1 && isLineEndByte(bytes[start - 1])) return end;
    } else if (last === CR) {
      // A CR followed by LF is the first half of a CRLF: the line end is not over here.
      if (end < bytes.length && bytes[end] === LF) continue;
      if (isLineEndByte(bytes[end - 2])) return end;
    }
  }
  return 0;
}

function isLineEndByte(byte: number | undefined): boolean {
  return byte === CR || byte === LF;
}

/** An SSE event carrying an OpenAI-shaped error: what a stream cut short ends with, so that OpenAI
 * SDKs raise it (they throw on a data event with an `error` field) instead of ending silently. */
export function sseErrorEvent(message: string, type: string, code: string): Buffer {
  return Buffer.from(`data: ${JSON.stringify({ error: { message, type, code, param: null } })}\n\n`);
}

/** Finds event boundaries in one text, left to right: a line end (CRLF, LF or CR) right after
 * another. The next CR and LF positions are remembered between calls, so a text without CRs (the
 * usual "\n\n" stream) is searched for one once, not once per event. */
class EventEnds {
  private lf = -2;
  private cr = -2;

  constructor(private readonly text: string) {}

  /** The first boundary at or after `from` (calls go left to right): `bodyEnd` where its first line
   * end starts, `end` just past the second. Starting on the LF of a CRLF finds the same `end` (that
   * LF ends the line either way). */
  next(from: number): { bodyEnd: number; end: number } | null {
    const text = this.text;
    let i = this.lineEnd(from);
    while (i !== -1) {
      const second = i + lineEndLength(text, i);
      if (second < text.length && isLineEndCode(text.charCodeAt(second))) return { bodyEnd: i, end: second + lineEndLength(text, second) };
      i = this.lineEnd(second);
    }
    return null;
  }

  private lineEnd(from: number): number {
    if (this.lf !== -1 && this.lf < from) this.lf = this.text.indexOf("\n", from);
    if (this.cr !== -1 && this.cr < from) this.cr = this.text.indexOf("\r", from);
    if (this.cr === -1) return this.lf;
    return this.lf === -1 || this.cr < this.lf ? this.cr : this.lf;
  }
}

/** 2 for a CRLF at `i`, else 1 (a LF, or a CR: one at the end of the text counts alone). */
function lineEndLength(text: string, i: number): number {
  return text.charCodeAt(i) === CR && text.charCodeAt(i + 1) === LF ? 2 : 1;
}

function isLineEndCode(code: number): boolean {
  return code === CR || code === LF;
}

/** The message of an SSE error event's `error` field (OpenAI's object, or a bare string). */
function errorMessage(error: unknown): string {
  if (typeof error === "string" && error !== "") return error;
  if (isRecord(error) && typeof error["message"] === "string" && error["message"] !== "") return error["message"];
  return "the stream ended with an error event";
}

function nonEmptyString(value: unknown): value is string {
  return typeof value === "string" && value.length > 0;
}

/** Whether a chat delta (streamed) or message (not) carries generated output: content, reasoning
 * (vLLM and SGLang reasoning parsers: `reasoning_content`, or `reasoning`), or a tool or function call. */
function hasOutput(message: Record<string, unknown>): boolean {
  if (nonEmptyString(message["content"]) || hasReasoning(message)) return true;
  const toolCalls = message["tool_calls"];
  return (Array.isArray(toolCalls) && toolCalls.length > 0) || isRecord(message["function_call"]);
}

function hasReasoning(message: Record<string, unknown>): boolean {
  return nonEmptyString(message["reasoning_content"]) || nonEmptyString(message["reasoning"]);
}

function readUsage(usage: Record<string, unknown>): UsageReport {
  const details = usage["prompt_tokens_details"];
  const cached = isRecord(details) ? details["cached_tokens"] : undefined;
  return {
    promptTokens: usageNumber(usage["prompt_tokens"]),
    completionTokens: usageNumber(usage["completion_tokens"]),
    cachedTokens: usageNumber(cached),
  };
}

/** What a buffered non-streaming completion body says: the reply next-turn learning reads (its
 * `content`, and the `toolCalls` the next turn sends back; both empty after reasoning, or when the
 * tool calls are unknown: tool-calls.ts), usage, and whether it holds any generated output (text,
 * reasoning, a tool call: `output`), as a stream's first token would show. */
export interface CompletionBody {
  content: string;
  toolCalls: AssistantToolCall[];
  usage: UsageReport | null;
  output: boolean;
}

export function readCompletionBody(body: string): CompletionBody {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { content: "", toolCalls: [], usage: null, output: false };
  }
  if (!isRecord(parsed)) return { content: "", toolCalls: [], usage: null, output: false };
  let content = "";
  let toolCalls: AssistantToolCall[] = [];
  let output = false;
  const choices = Array.isArray(parsed["choices"]) ? (parsed["choices"] as unknown[]) : [];
  for (const [i, choice] of choices.entries()) {
    if (!isRecord(choice)) continue;
    const message = isRecord(choice["message"]) ? choice["message"] : null;
    output ||= message ? hasOutput(message) : nonEmptyString(choice["text"]);
    if (i !== 0) continue;
    // A reply after reasoning is not learned as the next turn (SseObserver.reasoningSeen).
    if (message && typeof message["content"] === "string") content = hasReasoning(message) ? "" : message["content"];
    else if (typeof choice["text"] === "string") content = choice["text"];
    if (message && !hasReasoning(message)) {
      const calls = messageToolCalls(message);
      // Unknown tool calls: the text alone is not what the next turn sends back either.
      if (calls === null) content = "";
      toolCalls = calls ?? [];
    }
  }
  const usage = isRecord(parsed["usage"]) ? readUsage(parsed["usage"]) : null;
  return { content, toolCalls, usage, output };
}
