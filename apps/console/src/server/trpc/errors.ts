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

function toTRPCError(error: unknown): unknown {
  if (error instanceof DomainError) return new TRPCError({ code: CODES[error.kind], message: error.message, cause: error });
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
