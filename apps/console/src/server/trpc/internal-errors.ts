// What the operator reads of a failure nothing mapped (errors.ts maps domain errors and the database
// codes it knows; anything else reaches tRPC as a 500 carrying its own message). That message is not
// for the operator: drizzle's says "Failed query: <statement> params: <values>" (a token, a key's
// hash, a user's name), a driver's names tables and columns, a bug's names code. The answer says
// what failed and gives an id; report-error.ts logs the whole error under the same id.
import "server-only";
import { randomBytes } from "node:crypto";
import type { TRPCError } from "@trpc/server";
import { isChangeMaybeSaved } from "../services/after-commit";

/** Whether the error's own message is not for the operator: a 500 nothing mapped. A 500 that says
 * the change may be saved was written for the operator (errors.ts), as was every other code. */
export function isUnexpected(error: TRPCError): boolean {
  return error.code === "INTERNAL_SERVER_ERROR" && !isChangeMaybeSaved(error.cause);
}

// One id per error: the formatter (the answer) and the report (the log line) ask for it apart.
const ids = new WeakMap<TRPCError, string>();

/** The id the answer and the log line share. */
export function errorIdOf(error: TRPCError): string {
  let id = ids.get(error);
  if (id === undefined) {
    id = randomBytes(4).toString("hex");
    ids.set(error, id);
  }
  return id;
}

/** A database's error, as drizzle wraps it (DrizzleQueryError: the statement and its params) or as
 * the driver throws it (better-sqlite3's SqliteError; node-postgres's, with a SQLSTATE and a severity). */
function isDatabaseError(error: unknown): boolean {
  for (let current = error, depth = 0; current && typeof current === "object" && depth < 4; depth++) {
    const e = current as { query?: unknown; params?: unknown; name?: unknown; code?: unknown; severity?: unknown };
    if (typeof e.query === "string" && Array.isArray(e.params)) return true;
    if (e.name === "SqliteError") return true;
    if (typeof e.code === "string" && typeof e.severity === "string") return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** What the operator reads of an unexpected error: what failed, and the id to find it in the log. */
export function unexpectedMessage(error: TRPCError): string {
  const what = isDatabaseError(error.cause) ? "the console's database failed" : "the console failed";
  return `${what} on this request (error ${errorIdOf(error)}); the details are in the console's log`;
}
