// Watches an OpenAI server-sent-event stream as it passes through the LB. It measures (first content
// delta, output text, usage) without holding the stream back: when the client asked for usage itself
// every upstream chunk is forwarded as is; otherwise the LB asked for usage on the client's behalf and
// must drop that extra usage event, so it forwards whole events only (a partial event is held until
// its terminating blank line arrives, never the whole response).

export interface UsageReport {
  promptTokens: number | null;
  completionTokens: number | null;
  cachedTokens: number | null;
}

export interface SseObserverOptions {
  /** Drop usage-only events (and the usage field on content events) before they reach the client. */
  stripUsage: boolean;
  /** Called once, when the first non-empty content (chat delta or completion text) goes by. */
  onFirstContent: () => void;
}

export class SseObserver {
  content = "";
  usage: UsageReport | null = null;
  contentEvents = 0;
  done = false;
  private pending = "";
  private readonly decoder = new TextDecoder();
  private sawContent = false;

  constructor(private readonly options: SseObserverOptions) {}

  /** Feeds one upstream chunk; returns what to forward to the client now (possibly empty). */
  push(chunk: Buffer): Buffer {
    const text = this.pending + this.decoder.decode(chunk, { stream: true });
    const keep = this.options.stripUsage ? ([] as string[]) : null;
    let eventStart = 0;
    for (;;) {
      const boundary = findEventEnd(text, eventStart);
      if (boundary === null) break;
      const raw = text.slice(eventStart, boundary.end);
      const forward = this.readEvent(text.slice(eventStart, boundary.bodyEnd));
      if (keep) {
        if (forward === true) keep.push(raw);
        else if (typeof forward === "string") keep.push(forward + text.slice(boundary.bodyEnd, boundary.end));
      }
      eventStart = boundary.end;
    }
    this.pending = text.slice(eventStart);
    if (!keep) return chunk;
    return keep.length === 0 ? EMPTY : Buffer.from(keep.join(""));
  }

  /** Whatever is still held at end of stream (an unterminated last event) goes out unchanged. */
  end(): Buffer {
    const rest = this.pending + this.decoder.decode();
    this.pending = "";
    if (rest.trim() !== "") this.readEvent(rest);
    return this.options.stripUsage && rest !== "" ? Buffer.from(rest) : EMPTY;
  }

  /** Returns true to forward the event unchanged, false to drop it, or a rewritten event body. */
  private readEvent(eventText: string): boolean | string {
    let data = "";
    let dataLines = 0;
    for (const line of eventText.split("\n")) {
      const clean = line.endsWith("\r") ? line.slice(0, -1) : line;
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
    const choices = Array.isArray(parsed["choices"]) ? (parsed["choices"] as unknown[]) : [];
    for (const choice of choices) {
      if (!isRecord(choice)) continue;
      const delta = isRecord(choice["delta"]) ? choice["delta"] : null;
      const piece = delta ? delta["content"] : choice["text"];
      if (typeof piece === "string" && piece.length > 0) {
        if (!this.sawContent) {
          this.sawContent = true;
          this.options.onFirstContent();
        }
        this.content += piece;
        this.contentEvents++;
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

function findEventEnd(text: string, from: number): { bodyEnd: number; end: number } | null {
  const lf = text.indexOf("\n\n", from);
  const crlf = text.indexOf("\r\n\r\n", from);
  if (lf === -1 && crlf === -1) return null;
  if (crlf !== -1 && (lf === -1 || crlf < lf)) return { bodyEnd: crlf, end: crlf + 4 };
  return { bodyEnd: lf, end: lf + 2 };
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function readUsage(usage: Record<string, unknown>): UsageReport {
  const details = usage["prompt_tokens_details"];
  const cached = isRecord(details) ? details["cached_tokens"] : undefined;
  return {
    promptTokens: typeof usage["prompt_tokens"] === "number" ? usage["prompt_tokens"] : null,
    completionTokens: typeof usage["completion_tokens"] === "number" ? usage["completion_tokens"] : null,
    cachedTokens: typeof cached === "number" ? cached : null,
  };
}

/** Reads content and usage out of a buffered non-streaming completion body. */
export function readCompletionBody(body: string): { content: string; usage: UsageReport | null } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { content: "", usage: null };
  }
  if (!isRecord(parsed)) return { content: "", usage: null };
  let content = "";
  const choices = Array.isArray(parsed["choices"]) ? (parsed["choices"] as unknown[]) : [];
  const first = choices[0];
  if (isRecord(first)) {
    const message = first["message"];
    if (isRecord(message) && typeof message["content"] === "string") content = message["content"];
    else if (typeof first["text"] === "string") content = first["text"];
  }
  const usage = isRecord(parsed["usage"]) ? readUsage(parsed["usage"]) : null;
  return { content, usage };
}
