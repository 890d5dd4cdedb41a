// A logger for tests that read what the console logged: every line, parsed, in `lines`.
import "server-only";
import { Writable } from "node:stream";
import pino, { type Logger } from "pino";

/** What a test reads of a log line; the rest of its fields are there too. */
export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** A pino logger at `level` (default "info") whose lines are kept, parsed, in `lines`, as written. */
export function loggedLines(level: pino.LevelWithSilent = "info"): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n")) if (line.trim()) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { log: pino({ level }, sink), lines };
}
