// Trace readers: Mooncake FAST'25 and ART-Chat JSONL, streamed line by line (readline over a file
// stream) or parsed from text in memory. Every row is validated with zod; a bad row is reported
// as `file:line: field: problem` and either fails the read (default) or is skipped.
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { createInterface } from "node:readline";
import { createTraceTransform, type TraceControls } from "./controls";
import { ArtChatRowSchema, describeZodError, MooncakeRowSchema } from "./schema";
import { BLOCK_TOKENS, type BlockTokens, type TraceFileFormat, type TraceRequest } from "./types";

export interface TraceReadOptions extends TraceControls {
  /** Row format; "auto" (default) decides from the first row: string hash ids or a body → ART-Chat. */
  format?: TraceFileFormat | "auto";
  /** Override the format's block size (Mooncake 512, ART-Chat 256). */
  blockTokens?: BlockTokens;
  /** What to do with an invalid row: "fail" (default) throws TraceRowError, "skip" drops it. */
  onInvalid?: "fail" | "skip";
  /** Called for every skipped row when onInvalid is "skip". */
  onSkip?: (error: TraceRowError) => void;
  /** Stop after emitting this many requests (after the window). */
  limit?: number;
}

/** A row that failed to parse or validate; the message is `source:line: detail`. */
export class TraceRowError extends Error {
  constructor(
    readonly source: string,
    readonly line: number,
    readonly detail: string,
  ) {
    super(`${source}:${line}: ${detail}`);
    this.name = "TraceRowError";
  }
}

/** Reads rows one line at a time, keeping the per-file state (format, index, window). */
class RowParser {
  private format: TraceFileFormat | undefined;
  private nextIndex = 0;
  private readonly transform;

  constructor(
    private readonly source: string,
    private readonly options: TraceReadOptions,
  ) {
    this.format = options.format === "auto" ? undefined : options.format;
    this.transform = createTraceTransform(options);
  }

  /** The request for one line, or undefined for a blank, skipped or out-of-window line. */
  parseLine(text: string, line: number): TraceRequest | undefined {
    if (text.trim() === "") return undefined;
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (error) {
      return this.reject(line, `invalid JSON: ${(error as Error).message}`);
    }
    const format = (this.format ??= detectFormat(raw));
    const parsed = format === "mooncake" ? MooncakeRowSchema.safeParse(raw) : ArtChatRowSchema.safeParse(raw);
    if (!parsed.success) return this.reject(line, describeZodError(parsed.error, raw));
    const row = parsed.data;
    const request: TraceRequest = {
      index: this.nextIndex++,
      timestampMs: row.timestamp,
      sourceTimestampMs: row.timestamp,
      inputTokens: row.input_length,
      outputTokens: row.output_length,
      hashIds: row.hash_ids,
      blockTokens: this.options.blockTokens ?? BLOCK_TOKENS[format],
      format,
    };
    if ("body" in row && row.body !== undefined) request.body = row.body;
    return this.transform(request);
  }

  private reject(line: number, detail: string): undefined {
    const error = new TraceRowError(this.source, line, detail);
    if ((this.options.onInvalid ?? "fail") === "fail") throw error;
    this.options.onSkip?.(error);
    return undefined;
  }
}

function detectFormat(raw: unknown): TraceFileFormat {
  if (typeof raw === "object" && raw !== null) {
    const row = raw as { hash_ids?: unknown; body?: unknown };
    if (row.body !== undefined) return "art-chat";
    if (Array.isArray(row.hash_ids) && typeof row.hash_ids[0] === "string") return "art-chat";
  }
  return "mooncake";
}

/**
 * Streams a trace file as normalised requests. Rows are read lazily, so a 12k-row trace never sits
 * in memory as text. Throws a clear error naming the path when the file does not exist.
 */
export async function* readTrace(path: string, options: TraceReadOptions = {}): AsyncGenerator<TraceRequest> {
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new Error(`trace path is not a file: ${path}`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") throw new Error(`trace file not found: ${path}`);
    throw error;
  }
  const parser = new RowParser(path, options);
  const input = createReadStream(path, { encoding: "utf8" });
  const lines = createInterface({ input, crlfDelay: Infinity });
  let line = 0;
  let emitted = 0;
  const limit = options.limit ?? Infinity;
  try {
    for await (const text of lines) {
      line++;
      const request = parser.parseLine(text, line);
      if (!request) continue;
      yield request;
      if (++emitted >= limit) return;
    }
  } finally {
    // Also on early exit (limit, a consumer's break, a bad row): release the file descriptor.
    lines.close();
    input.destroy();
  }
}

/** Parses trace JSONL held in memory (small inputs, tests). `source` labels error messages. */
export function parseTraceText(text: string, options: TraceReadOptions & { source?: string } = {}): TraceRequest[] {
  const parser = new RowParser(options.source ?? "<trace>", options);
  const out: TraceRequest[] = [];
  const limit = options.limit ?? Infinity;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length && out.length < limit; i++) {
    const request = parser.parseLine(lines[i] as string, i + 1);
    if (request) out.push(request);
  }
  return out;
}

/** Reads a whole trace file into an array (streamed underneath). */
export async function loadTrace(path: string, options: TraceReadOptions = {}): Promise<TraceRequest[]> {
  const out: TraceRequest[] = [];
  for await (const request of readTrace(path, options)) out.push(request);
  return out;
}
