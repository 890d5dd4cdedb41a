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
  /**
   * Row format; "auto" (default) decides from the first valid row that shows it: a `body` or hex-string
   * hash ids → ART-Chat, integer hash ids → Mooncake. Rows with empty `hash_ids` and no body show
   * nothing; a file of only such rows (or invalid ones) reads as Mooncake.
   */
  format?: TraceFileFormat | "auto";
  /** Override the format's block size (Mooncake 512, ART-Chat 256). */
  blockTokens?: BlockTokens;
  /** What to do with an invalid row: "fail" (default) throws TraceRowError, "skip" drops it. */
  onInvalid?: "fail" | "skip";
  /** Called for every skipped row when onInvalid is "skip". */
  onSkip?: (error: TraceRowError) => void;
  /** Stop after emitting this many requests (after the window); 0 emits none. */
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

/**
 * In "auto" mode, how many valid rows that say nothing about their format (empty `hash_ids`, no
 * `body`) are held back waiting for one that does; past this the file is read as Mooncake.
 */
export const AUTO_FORMAT_MAX_PENDING_ROWS = 1000;

type RawRow = { timestamp: number; input_length: number; output_length: number; hash_ids: (number | string)[]; body?: Record<string, unknown> };

const NONE: readonly TraceRequest[] = [];

/**
 * Reads rows one line at a time, keeping the per-file state (format, index, window). In "auto" mode
 * the format is decided by the first valid row that shows it (see evidenceOf); valid rows before
 * that one are held and emitted, in order, once it is known (or at the end of the input).
 */
class RowParser {
  private format: TraceFileFormat | undefined;
  private pending: RawRow[] = [];
  private nextIndex = 0;
  private readonly transform;

  constructor(
    private readonly source: string,
    private readonly options: TraceReadOptions,
  ) {
    this.format = options.format === undefined || options.format === "auto" ? undefined : options.format;
    this.transform = createTraceTransform(options);
  }

  /** The requests a line releases: none for a blank, skipped, held or out-of-window line. */
  parseLine(lineText: string, line: number): readonly TraceRequest[] {
    // A file saved with a UTF-8 byte-order mark (Windows tools) starts with an invisible U+FEFF,
    // which JSON.parse refuses as an "unexpected token" nobody can see.
    const text = line === 1 && lineText.startsWith("\uFEFF") ? lineText.slice(1) : lineText;
    if (text.trim() === "") return NONE;
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (error) {
      return this.reject(line, `invalid JSON: ${(error as Error).message}`);
    }
    // Undecided rows without evidence validate as Mooncake: for them (no body, no ids) the two
    // schemas agree, and Mooncake's messages are the more specific.
    const evidence = this.format === undefined ? evidenceOf(raw) : undefined;
    const schema = (this.format ?? evidence ?? "mooncake") === "mooncake" ? MooncakeRowSchema : ArtChatRowSchema;
    const parsed = schema.safeParse(raw);
    if (!parsed.success) return this.reject(line, describeZodError(parsed.error, raw));
    const row = parsed.data as RawRow;
    if (this.format !== undefined) return this.emit(this.format, row);
    if (evidence !== undefined) {
      this.format = evidence;
      return this.release(row);
    }
    this.pending.push(row);
    if (this.pending.length < AUTO_FORMAT_MAX_PENDING_ROWS) return NONE;
    this.format = "mooncake";
    return this.release();
  }

  /** End of input: rows still held (no row ever showed the format) are read as Mooncake. */
  finish(): readonly TraceRequest[] {
    if (this.pending.length === 0) return NONE;
    this.format ??= "mooncake";
    return this.release();
  }

  private release(last?: RawRow): TraceRequest[] {
    const rows = last ? [...this.pending, last] : this.pending;
    this.pending = [];
    return rows.flatMap((row) => this.emit(this.format as TraceFileFormat, row));
  }

  private blockTokens(format: TraceFileFormat): BlockTokens {
    return this.options.blockTokens ?? BLOCK_TOKENS[format];
  }

  private emit(format: TraceFileFormat, row: RawRow): readonly TraceRequest[] {
    const request: TraceRequest = {
      index: this.nextIndex++,
      timestampMs: row.timestamp,
      sourceTimestampMs: row.timestamp,
      inputTokens: row.input_length,
      outputTokens: row.output_length,
      hashIds: row.hash_ids,
      blockTokens: this.blockTokens(format),
      format,
    };
    if (row.body !== undefined) request.body = row.body;
    const kept = this.transform(request);
    return kept ? [kept] : NONE;
  }

  private reject(line: number, detail: string): readonly TraceRequest[] {
    const error = new TraceRowError(this.source, line, detail);
    if ((this.options.onInvalid ?? "fail") === "fail") throw error;
    this.options.onSkip?.(error);
    return NONE;
  }
}

/**
 * The format a raw row shows, if any: a `body` (a recorded chat request) or a hex-string hash id
 * means ART-Chat; integer hash ids mean Mooncake. A row with no body and empty (or no) `hash_ids`
 * shows nothing, and neither does a row that is not an object.
 */
function evidenceOf(raw: unknown): TraceFileFormat | undefined {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return undefined;
  const row = raw as { hash_ids?: unknown; body?: unknown };
  if (row.body !== undefined) return "art-chat";
  if (!Array.isArray(row.hash_ids) || row.hash_ids.length === 0) return undefined;
  if (row.hash_ids.some((id) => typeof id === "string")) return "art-chat";
  return typeof row.hash_ids[0] === "number" ? "mooncake" : undefined;
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
  const limit = options.limit ?? Infinity;
  if (limit <= 0) return;
  const parser = new RowParser(path, options);
  const input = createReadStream(path, { encoding: "utf8" });
  const lines = createInterface({ input, crlfDelay: Infinity });
  let line = 0;
  let emitted = 0;
  try {
    for await (const text of lines) {
      line++;
      for (const request of parser.parseLine(text, line)) {
        yield request;
        if (++emitted >= limit) return;
      }
    }
    for (const request of parser.finish()) {
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
  // Line ends as readTrace's readline sees them: CRLF, LF, or a lone CR (old Mac files).
  const lines = text.split(/\r\n|\r|\n/);
  for (let i = 0; i < lines.length && out.length < limit; i++) out.push(...parser.parseLine(lines[i] as string, i + 1));
  if (out.length < limit) out.push(...parser.finish());
  return out.slice(0, Math.max(0, limit));
}

/** Reads a whole trace file into an array (streamed underneath). */
export async function loadTrace(path: string, options: TraceReadOptions = {}): Promise<TraceRequest[]> {
  const out: TraceRequest[] = [];
  for await (const request of readTrace(path, options)) out.push(request);
  return out;
}
