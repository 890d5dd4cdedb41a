// Domain errors: what services throw when an operator's request cannot be honoured. Routers map them
// to TRPCError codes (trpc/errors.ts); route handlers map them to HTTP statuses. The message is shown
// in the UI as is, so it names the object and says what to do.
import "server-only";

/** not-found 404, conflict 409, invalid 400, precondition 412, busy 429 (a capacity limit: retry later). */
export type DomainErrorKind = "not-found" | "conflict" | "invalid" | "precondition" | "busy";

// Next bundles this module more than once: the runtime is created by instrumentation.ts's bundle and
// the routers run in the route handlers' bundle, each with its own copy of this class. A plain
// `instanceof` then fails for an error thrown by the runtime (FailoverService, TunerService,
// ExperimentRunner) and the operator's mistake became a 500. The brand is a registered symbol, the
// same in every copy, and `instanceof` checks it.
const BRAND = Symbol.for("meridian.console.domain-error");

export class DomainError extends Error {
  readonly kind: DomainErrorKind;
  readonly [BRAND] = true;
  constructor(kind: DomainErrorKind, message: string) {
    super(message);
    this.name = "DomainError";
    this.kind = kind;
  }

  static override [Symbol.hasInstance](value: unknown): value is DomainError {
    return typeof value === "object" && value !== null && (value as { [BRAND]?: unknown })[BRAND] === true;
  }
}

export const notFound = (what: string, id: string) => new DomainError("not-found", `${what} "${id}" does not exist`);
export const conflict = (message: string) => new DomainError("conflict", message);
export const invalid = (message: string) => new DomainError("invalid", message);
export const precondition = (message: string) => new DomainError("precondition", message);
export const busy = (message: string) => new DomainError("busy", message);
