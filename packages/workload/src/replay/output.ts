// The replay's output files: the per-request JSONL (outPath) and the summary JSON (summaryPath).
// Both are opened before anything is sent, so a path that cannot be written fails the run at once
// instead of crashing it (an unhandled stream 'error') or after it (the summary lost). A write that
// fails later (a full disk) stops that file, not the run: the error comes back with the summary.
// The summary goes to a temporary file beside its path, renamed over it once written: a run that
// fails before it has a summary leaves the previous run's file as it was (opening the path itself
// would have truncated it).
import type { FileHandle } from "node:fs/promises";
import { open, rename, stat, unlink } from "node:fs/promises";
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

async function isRegularOrAbsent(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return true; // absent (or unreadable: opening its temporary file will say why)
  }
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
  // Only a regular file (or a new one) is replaced by rename: a device or pipe (/dev/stdout) is
  // written in place, and holds no previous run to keep.
  const summaryTemp = summaryPath === undefined || !(await isRegularOrAbsent(summaryPath)) ? undefined : `${summaryPath}.${process.pid}.tmp`;
  try {
    if (summaryPath !== undefined) summaryFile = await openFor("summaryPath", summaryTemp ?? summaryPath);
  } catch (error) {
    await outFile?.close();
    throw error instanceof ReplayOutputError ? new ReplayOutputError("summaryPath", summaryPath as string, error.cause) : error;
  }
  const dropSummaryTemp = async (): Promise<void> => {
    await summaryFile?.close().catch(() => undefined);
    if (summaryTemp !== undefined) await unlink(summaryTemp).catch(() => undefined);
  };
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
          await summaryFile.close();
          if (summaryTemp !== undefined) await rename(summaryTemp, summaryPath as string);
        } catch (error) {
          failure ??= new ReplayOutputError("summaryPath", summaryPath as string, error);
          await dropSummaryTemp();
        }
      }
      if (failure) throw new ReplayOutputError(failure.option, failure.path, failure.cause, summary);
    },
    close: async () => {
      if (closed) return;
      closed = true;
      await closeOut();
      await dropSummaryTemp();
    },
  };
}
