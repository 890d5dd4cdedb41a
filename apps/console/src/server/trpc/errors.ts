// Maps domain errors to tRPC error codes, keeping the domain message (the UI shows it as is).
import "server-only";
import { TRPCError, type TRPC_ERROR_CODE_KEY } from "@trpc/server";
import { DomainError, type DomainErrorKind } from "../errors";
import { isChangeMaybeSaved } from "../services/after-commit";

const CODES: Record<DomainErrorKind, TRPC_ERROR_CODE_KEY> = {
  "not-found": "NOT_FOUND",
  conflict: "CONFLICT",
  invalid: "BAD_REQUEST",
  precondition: "PRECONDITION_FAILED",
  busy: "TOO_MANY_REQUESTS",
};

/** The driver's error code, looked up through drizzle's wrapper (DrizzleQueryError keeps the
 * driver's error as its cause). */
function driverCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current && typeof current === "object" && depth < 4; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** SQLite's "another connection holds the write lock" (SQLITE_BUSY and its extended codes): the
 * operator's change was not made and can be retried. Services make sure of "not made": an error after
 * their transaction committed never reaches here as a database error (services/after-commit.ts). */
function isDatabaseBusy(error: unknown): boolean {
  return driverCode(error)?.startsWith("SQLITE_BUSY") === true;
}

/** PostgreSQL with several consoles: a deadlock or serialisation failure rolled the transaction back
 * (retry). */
const PG_RETRY = new Set(["40001", "40P01"]);
/** A UNIQUE index refused an insert or rename: PostgreSQL's unique violation, SQLite's UNIQUE and
 * PRIMARY KEY constraint failures. The services check "already exists" first; the index still refuses
 * when another console wrote the same name between the check and the write, or when the check and the
 * index compare differently (SQLite's lower() folds ASCII letters only, so "Édge" twice passes the check). */
const UNIQUE_VIOLATIONS = new Set(["23505", "SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"]);

function toTRPCError(error: unknown): unknown {
  if (error instanceof DomainError) return new TRPCError({ code: CODES[error.kind], message: error.message, cause: error });
  // Before the database's codes: its cause is one, but the change may be saved (never "nothing was changed").
  if (isChangeMaybeSaved(error)) return new TRPCError({ code: "INTERNAL_SERVER_ERROR", message: error.message, cause: error });
  const code = driverCode(error);
  if (isDatabaseBusy(error)) {
    return new TRPCError({
      code: "SERVICE_UNAVAILABLE",
      message: "the console's database is locked by another process; nothing was changed, retry in a moment",
      cause: error,
    });
  }
  if (code !== undefined && PG_RETRY.has(code)) {
    return new TRPCError({ code: "SERVICE_UNAVAILABLE", message: "the console's database was busy; nothing was changed, retry in a moment", cause: error });
  }
  if (code !== undefined && UNIQUE_VIOLATIONS.has(code)) {
    return new TRPCError({
      code: "CONFLICT",
      message: "that name or id already exists (perhaps another console made the same change at the same moment); nothing was changed here, reload",
      cause: error,
    });
  }
  return error;
}

/** Runs one service call, translating its domain errors. Services are async: the call is awaited
 * here, so an error thrown after an await (inside a transaction, say) is translated too. */
export async function call<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw toTRPCError(error);
  }
}
