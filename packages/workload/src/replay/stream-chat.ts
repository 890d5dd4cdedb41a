// One streamed chat completion, measured from the client's side: TTFT to the first content delta
// (the role-only first chunk does not count), E2E, inter-delta gaps, output tokens, and the cached
// prompt tokens from the usage chunk (requested with stream_options.include_usage). A request is ok
// only when a 2xx text/event-stream ends with `data: [DONE]` and carried no error event.
import { performance } from "node:perf_hooks";
import { request, type Dispatcher } from "undici";
import type { ChatMessage } from "../prompt/synth";
import { assertTimerMs } from "./timer-limit";

export interface ChatStreamRequest {
  url: string;
  model: string;
  messages: ChatMessage[];
  maxTokens: number;
  headers: Record<string, string>;
  /** Ask engines that support it (vLLM, SGLang) to generate exactly maxTokens. */
  ignoreEos?: boolean;
  signal: AbortSignal;
  timeoutMs: number;
  dispatcher?: Dispatcher;
}

export interface ChatStreamResult {
  /** HTTP status; 0 when no response arrived. */
  status: number;
  ok: boolean;
  error?: string;
  /** From send to the first content delta (not the role-only chunk). */
  ttftMs?: number;
  /** From send to the end of the stream. */
  e2eMs?: number;
  /** Mean gap between consecutive content deltas. */
  itlMeanMs?: number;
  /** Largest gap between consecutive content deltas. */
  itlMaxMs?: number;
  contentDeltas: number;
  /** usage.completion_tokens when reported, else the number of content deltas. */
  outputTokens: number;
  promptTokens?: number;
  cachedTokens?: number;
}

interface StreamChunk {
  choices?: { delta?: { content?: unknown; reasoning_content?: unknown }; text?: unknown }[];
  usage?: {
    prompt_tokens?: number;
    completion_tokens?: number;
    prompt_tokens_details?: { cached_tokens?: number } | null;
  } | null;
  error?: { message?: string };
}

const isNonEmptyString = (v: unknown): v is string => typeof v === "string" && v.length > 0;

/** Whether a chunk carries generated text (content, reasoning, or a completions `text`). */
function hasContent(chunk: StreamChunk): boolean {
  const choice = chunk.choices?.[0];
  if (!choice) return false;
  return isNonEmptyString(choice.delta?.content) || isNonEmptyString(choice.delta?.reasoning_content) || isNonEmptyString(choice.text);
}

/** The OpenAI error message of a non-2xx body, or the start of the body. */
function errorMessage(status: number, text: string): string {
  return `HTTP ${status}: ${embeddedError(text) ?? text.slice(0, 200)}`;
}

function headerValue(value: string | string[] | undefined): string {
  return (Array.isArray(value) ? value[0] : value)?.trim() ?? "";
}

/** `text/event-stream`, with or without parameters (`; charset=utf-8`), in any case. */
function isEventStream(contentType: string): boolean {
  return contentType.split(";")[0]?.trim().toLowerCase() === "text/event-stream";
}

/** The OpenAI error message in a body, if it is one (`{"error": {"message": ...}}` or `{"error": "..."}`). */
function embeddedError(text: string): string | undefined {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string } | null;
    const message = typeof parsed?.error === "string" ? parsed.error : parsed?.error?.message;
    return typeof message === "string" && message.length > 0 ? message.slice(0, 200) : undefined;
  } catch {
    return undefined;
  }
}

export async function streamChat(req: ChatStreamRequest): Promise<ChatStreamResult> {
  assertTimerMs("timeoutMs", req.timeoutMs);
  // One controller per request, fed by the caller's signal through a listener removed when the
  // request ends. Not AbortSignal.any([req.signal, …]): on Node 20 the caller's long-lived signal
  // (an endless load generator's) keeps an entry for every composite made from it, forever.
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(req.signal.reason);
  if (req.signal.aborted) onAbort();
  else req.signal.addEventListener("abort", onAbort, { once: true });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error(`timeout after ${req.timeoutMs} ms`));
  }, req.timeoutMs);
  try {
    return await exchange(req, controller.signal, () => timedOut);
  } finally {
    clearTimeout(timer);
    req.signal.removeEventListener("abort", onAbort);
  }
}

/** The request and its measured stream; `signal` ends it early (the caller's abort or the timeout). */
async function exchange(req: ChatStreamRequest, signal: AbortSignal, timedOut: () => boolean): Promise<ChatStreamResult> {
  const body = JSON.stringify({
    model: req.model,
    messages: req.messages,
    max_tokens: req.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
    ...(req.ignoreEos ? { ignore_eos: true } : {}),
  });
  const sentAt = performance.now();
  const result: ChatStreamResult = { status: 0, ok: false, contentDeltas: 0, outputTokens: 0 };
  const failWith = (error: unknown): ChatStreamResult => {
    if (req.signal.aborted) result.error = "aborted";
    else if (timedOut()) result.error = `timeout after ${req.timeoutMs} ms`;
    else result.error = (error as Error).message || String(error);
    result.ok = false;
    return result;
  };

  let res: Dispatcher.ResponseData;
  try {
    res = await request(req.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", ...req.headers },
      body,
      signal,
      headersTimeout: req.timeoutMs,
      bodyTimeout: req.timeoutMs,
      ...(req.dispatcher ? { dispatcher: req.dispatcher } : {}),
    });
  } catch (error) {
    return failWith(error);
  }
  result.status = res.statusCode;
  try {
    if (res.statusCode < 200 || res.statusCode >= 300) {
      result.error = errorMessage(res.statusCode, await res.body.text());
      return result;
    }
    // A 2xx that is not a stream (a JSON error or a non-streamed completion from a misconfigured
    // upstream) measured nothing: a failure, not a success with no tokens.
    const contentType = headerValue(res.headers["content-type"]);
    if (!isEventStream(contentType)) {
      const detail = embeddedError(await res.body.text());
      result.error = `stream: response was not an event stream (content-type ${contentType || "missing"})${detail ? `: ${detail}` : ""}`;
      return result;
    }

    let firstContentAt: number | undefined;
    let lastContentAt = 0;
    let gapSum = 0;
    let gapMax = 0;
    let completionTokens: number | undefined;
    let streamError: string | undefined;
    let dataEvents = 0;
    let done = false;
    let buffered = "";
    const decoder = new TextDecoder();

    const onLine = (line: string): void => {
      if (!line.startsWith("data:")) return; // comments (":"), event names, blank separators
      const payload = line.slice(5).trim();
      if (payload === "") return;
      if (payload === "[DONE]") {
        done = true;
        return;
      }
      dataEvents++;
      let chunk: StreamChunk;
      try {
        chunk = JSON.parse(payload) as StreamChunk;
      } catch {
        streamError ??= `stream: unparseable chunk ${payload.slice(0, 80)}`;
        return;
      }
      if (chunk.error) streamError ??= `stream: ${chunk.error.message ?? "error event"}`;
      if (hasContent(chunk)) {
        const now = performance.now();
        if (firstContentAt === undefined) firstContentAt = now;
        else {
          const gap = now - lastContentAt;
          gapSum += gap;
          if (gap > gapMax) gapMax = gap;
        }
        lastContentAt = now;
        result.contentDeltas++;
      }
      if (chunk.usage) {
        if (typeof chunk.usage.prompt_tokens === "number") result.promptTokens = chunk.usage.prompt_tokens;
        if (typeof chunk.usage.completion_tokens === "number") completionTokens = chunk.usage.completion_tokens;
        const cached = chunk.usage.prompt_tokens_details?.cached_tokens;
        if (typeof cached === "number") result.cachedTokens = cached;
      }
    };

    // Why the body ended early, when the connection failed under a stream that had started: an
    // engine or LB that dies, or fails after its headers, resets the socket rather than ending the
    // body, and that is the same cut-off stream as a clean end without [DONE], not a network error.
    let cutOff: string | undefined;
    try {
      for await (const piece of res.body) {
        buffered += decoder.decode(piece as Buffer, { stream: true });
        let newline: number;
        while ((newline = buffered.indexOf("\n")) >= 0) {
          onLine(buffered.slice(0, newline).replace(/\r$/, ""));
          buffered = buffered.slice(newline + 1);
        }
      }
    } catch (error) {
      // The caller's abort and the timeouts (ours, or undici's idle body timeout of the same length)
      // are reported as such (failWith).
      if (signal.aborted || (error as { code?: unknown }).code === "UND_ERR_BODY_TIMEOUT") throw error;
      cutOff = (error as Error).message || String(error);
    }
    // A line the reset cut in two is not an event: only a body that ended cleanly has a last line.
    buffered += decoder.decode();
    if (cutOff === undefined && buffered.length > 0) onLine(buffered.replace(/\r$/, ""));

    const endAt = performance.now();
    result.e2eMs = endAt - sentAt;
    if (firstContentAt !== undefined) {
      result.ttftMs = firstContentAt - sentAt;
      if (result.contentDeltas > 1) {
        result.itlMeanMs = gapSum / (result.contentDeltas - 1);
        result.itlMaxMs = gapMax;
      }
    }
    result.outputTokens = completionTokens ?? result.contentDeltas;
    // OpenAI, vLLM and SGLang end every stream (even one that ends in an error event) with
    // `data: [DONE]`; a stream that stops without it was cut off, and its numbers are partial.
    const cause = cutOff !== undefined ? ` (${cutOff})` : "";
    if (streamError) result.error = streamError;
    else if (dataEvents === 0 && !done) result.error = `stream: ended without any data event${cause}`;
    else if (!done) result.error = `stream: ended without [DONE]${cause}`;
    result.ok = result.error === undefined;
    return result;
  } catch (error) {
    res.body.destroy();
    return failWith(error);
  }
}
