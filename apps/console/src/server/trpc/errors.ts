// Maps domain errors to tRPC error codes, keeping the domain message (the UI shows it as is).
import "server-only";
import { TRPCError, type TRPC_ERROR_CODE_KEY } from "@trpc/server";
import { DomainError, type DomainErrorKind } from "../errors";

const CODES: Record<DomainErrorKind, TRPC_ERROR_CODE_KEY> = {
  "not-found": "NOT_FOUND",
  conflict: "CONFLICT",
  invalid: "BAD_REQUEST",
  precondition: "PRECONDITION_FAILED",
  busy: "TOO_MANY_REQUESTS",
};

/** SQLite's "another connection holds the write lock" (SQLITE_BUSY and its extended codes). A write
 * transaction that started by reading fails with it at once, without waiting for busy_timeout (SQLite
 * will not wait where waiting could deadlock): the operator's change was not made and can be retried. */
function isDatabaseBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("SQLITE_BUSY");
}

function toTRPCError(error: unknown): unknown {
  if (error instanceof DomainError) return new TRPCError({ code: CODES[error.kind], message: error.message, cause: error });
  if (isDatabaseBusy(error)) {
    return new TRPCError({
      code: "SERVICE_UNAVAILABLE",
      message: "the console's database is locked by another process; nothing was changed, retry in a moment",
      cause: error,
    });
  }
  return error;
}

/** Runs one service call, translating its domain errors. */
export function call<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw toTRPCError(error);
  }
}
