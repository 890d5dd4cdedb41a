// A small, forgiving parser for the Prometheus text exposition format (0.0.4), enough to read engine
// /metrics. Real scrapes are messy: HELP/TYPE lines may be missing, label values can hold escaped
// quotes and newlines or be empty, values use scientific notation, NaN and ±Inf, and a scrape cut off
// mid-histogram must still yield every complete sample before the cut. A line that cannot be parsed
// is skipped (counted in `skippedLines`) rather than failing the whole scrape.

export interface PromSample {
  /** Metric name as written, including suffixes such as _bucket / _total. */
  name: string;
  labels: Record<string, string>;
  value: number;
  /** Optional millisecond timestamp after the value. */
  timestampMs?: number;
}

export interface PromFamilyMeta {
  type?: string;
  help?: string;
}

export interface ParsedMetrics {
  samples: PromSample[];
  /** HELP / TYPE by family name. */
  families: Map<string, PromFamilyMeta>;
  skippedLines: number;
}

export function parsePrometheusText(text: string): ParsedMetrics {
  const samples: PromSample[] = [];
  const families = new Map<string, PromFamilyMeta>();
  let skippedLines = 0;
  let lineStart = 0;
  const length = text.length;
  while (lineStart < length) {
    let lineEnd = text.indexOf("\n", lineStart);
    if (lineEnd === -1) lineEnd = length;
    // Tolerate CRLF line endings.
    const rawLine = text.slice(lineStart, lineEnd);
    const line = rawLine.endsWith("\r") ? rawLine.slice(0, -1) : rawLine;
    lineStart = lineEnd + 1;
    const trimmed = line.trim();
    if (trimmed === "") continue;
    if (trimmed.startsWith("#")) {
      readComment(trimmed, families);
      continue;
    }
    const sample = parseSampleLine(trimmed);
    if (sample) samples.push(sample);
    else skippedLines++;
  }
  return { samples, families, skippedLines };
}

function readComment(line: string, families: Map<string, PromFamilyMeta>): void {
  // "# HELP name text" / "# TYPE name type"; any other comment is ignored.
  const match = /^#\s*(HELP|TYPE)\s+(\S+)\s*(.*)$/.exec(line);
  if (!match) return;
  const [, kind, name, rest] = match;
  if (!name) return;
  const meta = families.get(name) ?? {};
  if (kind === "TYPE") meta.type = (rest ?? "").trim();
  else meta.help = unescapeHelp(rest ?? "");
  families.set(name, meta);
}

function unescapeHelp(text: string): string {
  return text.replace(/\\(n|\\)/g, (_m, c: string) => (c === "n" ? "\n" : "\\"));
}

const NAME_START = /[a-zA-Z_:]/;
const NAME_CHAR = /[a-zA-Z0-9_:]/;

/** Parses `name{labels} value [timestamp]`; returns null when the line is malformed or truncated. */
export function parseSampleLine(line: string): PromSample | null {
  let pos = 0;
  if (!NAME_START.test(line[0] ?? "")) return null;
  while (pos < line.length && NAME_CHAR.test(line[pos] ?? "")) pos++;
  const name = line.slice(0, pos);
  const labels: Record<string, string> = {};
  pos = skipSpaces(line, pos);
  if (line[pos] === "{") {
    pos++;
    for (;;) {
      pos = skipSpaces(line, pos);
      if (line[pos] === "}") {
        pos++;
        break;
      }
      const keyStart = pos;
      while (pos < line.length && NAME_CHAR.test(line[pos] ?? "")) pos++;
      const key = line.slice(keyStart, pos);
      if (key === "") return null;
      pos = skipSpaces(line, pos);
      if (line[pos] !== "=") return null;
      pos = skipSpaces(line, pos + 1);
      if (line[pos] !== '"') return null;
      pos++;
      let value = "";
      let closed = false;
      while (pos < line.length) {
        const ch = line[pos];
        if (ch === "\\") {
          const next = line[pos + 1];
          if (next === "n") value += "\n";
          else if (next === '"') value += '"';
          else if (next === "\\") value += "\\";
          else value += "\\" + (next ?? "");
          pos += 2;
          continue;
        }
        if (ch === '"') {
          closed = true;
          pos++;
          break;
        }
        value += ch;
        pos++;
      }
      if (!closed) return null;
      labels[key] = value;
      pos = skipSpaces(line, pos);
      if (line[pos] === ",") {
        pos++;
        continue;
      }
      if (line[pos] === "}") {
        pos++;
        break;
      }
      return null;
    }
  }
  const rest = line.slice(pos).trim().split(/\s+/);
  const valueText = rest[0];
  if (valueText === undefined || valueText === "") return null;
  const value = parseValue(valueText);
  if (value === null) return null;
  const sample: PromSample = { name, labels, value };
  if (rest[1] !== undefined) {
    const ts = Number(rest[1]);
    if (Number.isFinite(ts)) sample.timestampMs = ts;
  }
  return sample;
}

function skipSpaces(line: string, pos: number): number {
  while (line[pos] === " " || line[pos] === "\t") pos++;
  return pos;
}

function parseValue(text: string): number | null {
  // Case-insensitive, as Prometheus (Go's ParseFloat) reads them: prom-client writes "Nan".
  switch (text.toLowerCase()) {
    case "nan":
      return Number.NaN;
    case "+inf":
    case "inf":
      return Number.POSITIVE_INFINITY;
    case "-inf":
      return Number.NEGATIVE_INFINITY;
  }
  // Number("") is 0 and Number("0x10") is 16; the format allows neither, so check the shape first.
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) return null;
  return Number(text);
}

/** Sum of the finite samples of `name` (across label sets), or undefined when it has none. NaN and
 * ±Inf are skipped: they state no quantity (an exporter's "unknown" or overflow), a sum over them is
 * not one either (+Inf + -Inf is NaN), and the gauges read here (requests, tokens) must be numbers the
 * router can weigh. A metric whose every sample is non-finite reads as absent. */
export function sumOf(parsed: ParsedMetrics, name: string): number | undefined {
  let total: number | undefined;
  for (const sample of parsed.samples) {
    if (sample.name !== name || !Number.isFinite(sample.value)) continue;
    total = (total ?? 0) + sample.value;
  }
  return total;
}

/** First sample of `name`, if any. */
export function firstOf(parsed: ParsedMetrics, name: string): PromSample | undefined {
  return parsed.samples.find((sample) => sample.name === name);
}
