// The replay's output files: the per-request JSONL (outPath) and the summary JSON (summaryPath).
// Both are opened before anything is sent, so a path that cannot be written fails the run at once
// instead of crashing it (an unhandled stream 'error') or after it (the summary lost). A write that
// fails later (a full disk) stops that file, not the run: the error comes back with the summary.
import type { FileHandle } from "node:fs/promises";
import { open } from "node:fs/promises";
import { finished } from "node:stream/promises";
import type { WriteStream } from "node:fs";
import type { ReplayRecord, ReplaySummary } from "./stats";

export type ReplayOutputOption = "outPath" | "summaryPath";

/** An output file that could not be opened or written. `summary` is the run's, when the run finished. */
export class ReplayOutputError extends Error {
  constructor(
    readonly option: ReplayOutputOption,
    readonly path: string,
    cause: unknown,
    readonly summary?: ReplaySummary,
  ) {
    super(`cannot write ${path}: ${(cause as Error).message ?? String(cause)}`, { cause });
    this.name = "ReplayOutputError";
  }
}

export interface ReplayOutputs {
  record(record: ReplayRecord): void;
  /** Writes the summary file and closes both; throws the first write error, carrying `summary`. */
  finish(summary: ReplaySummary): Promise<void>;
  /** Closes both files without a summary (the run failed; no-op after finish); write errors are dropped. */
  close(): Promise<void>;
}

async function openFor(option: ReplayOutputOption, path: string): Promise<FileHandle> {
  try {
    return await open(path, "w");
  } catch (error) {
    throw new ReplayOutputError(option, path, error);
  }
}

/** Opens the files the options name (either may be absent). */
export async function openOutputs(outPath: string | undefined, summaryPath: string | undefined): Promise<ReplayOutputs> {
  const outFile = outPath === undefined ? undefined : await openFor("outPath", outPath);
  let summaryFile: FileHandle | undefined;
  try {
    summaryFile = summaryPath === undefined ? undefined : await openFor("summaryPath", summaryPath);
  } catch (error) {
    await outFile?.close();
    throw error;
  }
  let failure: ReplayOutputError | undefined;
  let closed = false;
  const out: WriteStream | undefined = outFile?.createWriteStream();
  out?.on("error", (error) => {
    failure ??= new ReplayOutputError("outPath", outPath as string, error);
  });
  const closeOut = async (): Promise<void> => {
    if (!out) return;
    if (!out.destroyed) out.end();
    await finished(out).catch(() => undefined); // the 'error' listener has kept the error
  };
  return {
    record: (record) => {
      if (out && !out.destroyed) out.write(`${JSON.stringify(record)}\n`);
    },
    finish: async (summary) => {
      closed = true;
      await closeOut();
      if (summaryFile) {
        try {
          await summaryFile.writeFile(`${JSON.stringify(summary, null, 2)}\n`);
        } catch (error) {
          failure ??= new ReplayOutputError("summaryPath", summaryPath as string, error);
        } finally {
          await summaryFile.close().catch(() => undefined);
        }
      }
      if (failure) throw new ReplayOutputError(failure.option, failure.path, failure.cause, summary);
    },
    close: async () => {
      if (closed) return;
      closed = true;
      await closeOut();
      await summaryFile?.close().catch(() => undefined);
    },
  };
}
