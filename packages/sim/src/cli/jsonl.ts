// `meridian-sim compare --jsonl FILE`: one row per request and policy, served or refused. The file is
// opened before any simulation runs, so a path that cannot be written is a usage error at once
// rather than a crash after the whole run.

import { createWriteStream, openSync, type WriteStream } from "node:fs";
import { dirname, resolve } from "node:path";
import type { RefusedRecord, RequestRecord } from "../fleet";
import { UsageError } from "./args";

/** A served request's row: its RequestRecord, the status its client got and no error. */
export type ServedRow = { policy: string } & RequestRecord & { status: number; error: null };

/**
 * A refused request's row: the same keys as a served one, so every row parses alike; what only a
 * served request has (replica, cache, latencies) is null, and `error` is the refusal code.
 */
export type RefusedRow = { policy: string } & {
  [K in keyof RequestRecord]: K extends "id" | "trace_index" | "arrival_ms" | "turn_wait_ms" | "client_region" | "lb" | "input_tokens" | "output_tokens"
    ? RequestRecord[K]
    : null;
} & { status: number; error: string };

function servedRow(policy: string, r: RequestRecord): ServedRow {
  return { policy, ...r, status: 200, error: null };
}

function refusedRow(policy: string, r: RefusedRecord): RefusedRow {
  return {
    policy,
    id: r.id,
    trace_index: r.trace_index,
    arrival_ms: r.arrival_ms,
    ...(r.turn_wait_ms !== undefined ? { turn_wait_ms: r.turn_wait_ms } : {}),
    client_region: r.client_region,
    lb: r.lb,
    forwarded: null,
    replica: null,
    replica_region: null,
    input_tokens: r.input_tokens,
    output_tokens: r.output_tokens,
    predicted_cached_tokens: null,
    cached_tokens: null,
    ttft_ms: null,
    e2e_ms: null,
    itl_ms: null,
    lb_ttft_ms: null,
    config_version: null,
    weights: null,
    reason: null,
    status: r.status,
    error: r.code,
  };
}

function openFailure(path: string, error: unknown): UsageError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === "ENOENT") return new UsageError(`--jsonl: directory ${dirname(resolve(path))} does not exist`);
  if (code === "EISDIR") return new UsageError(`--jsonl: ${path} is a directory, not a file`);
  if (code === "ENOTDIR") return new UsageError(`--jsonl: ${dirname(resolve(path))} is not a directory`);
  if (code === "EACCES" || code === "EPERM" || code === "EROFS") return new UsageError(`--jsonl: cannot write ${path}: permission denied`);
  return new UsageError(`--jsonl: cannot open ${path} for writing: ${error instanceof Error ? error.message : String(error)}`);
}

/** The --jsonl file, open for writing. Rows are written in order; `close` reports any write failure. */
export class JsonlSink {
  private readonly stream: WriteStream;
  private failure: Error | null = null;

  /** Opens (creates or truncates) `path` synchronously: a path that cannot be written throws a UsageError. */
  constructor(readonly path: string) {
    let fd: number;
    try {
      fd = openSync(path, "w");
    } catch (error) {
      throw openFailure(path, error);
    }
    this.stream = createWriteStream(path, { fd });
    this.stream.on("error", (error) => {
      this.failure ??= error;
    });
  }

  write(row: ServedRow | RefusedRow): void {
    if (this.failure === null && !this.stream.destroyed) this.stream.write(`${JSON.stringify(row)}\n`);
  }

  /** One policy's rows: its served requests in completion order, then its refused ones. */
  writeRun(policy: string, served: readonly RequestRecord[], refused: readonly RefusedRecord[]): void {
    for (const r of served) this.write(servedRow(policy, r));
    for (const r of refused) this.write(refusedRow(policy, r));
  }

  /** Flushes and closes the file; a write that failed becomes a UsageError naming the file. */
  async close(): Promise<void> {
    if (this.failure === null && !this.stream.destroyed) {
      await new Promise<void>((done) => {
        this.stream.once("close", done);
        this.stream.end();
      });
    }
    if (this.failure !== null) throw new UsageError(`--jsonl: writing ${this.path} failed: ${this.failure.message}`);
  }

  /** Closes the file without waiting (the command failed before its rows were written). */
  abort(): void {
    this.stream.destroy();
  }
}
