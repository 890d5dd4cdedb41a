// Domain errors: what services throw when an operator's request cannot be honoured. Routers map them
// to TRPCError codes (trpc/errors.ts); route handlers map them to HTTP statuses. The message is shown
// in the UI as is, so it names the object and says what to do.
import "server-only";

export type DomainErrorKind = "not-found" | "conflict" | "invalid" | "precondition" | "unavailable";

export class DomainError extends Error {
  readonly kind: DomainErrorKind;
  constructor(kind: DomainErrorKind, message: string) {
    super(message);
    this.name = "DomainError";
    this.kind = kind;
  }
}

export const notFound = (what: string, id: string) => new DomainError("not-found", `${what} "${id}" does not exist`);
export const conflict = (message: string) => new DomainError("conflict", message);
export const invalid = (message: string) => new DomainError("invalid", message);
export const precondition = (message: string) => new DomainError("precondition", message);
