// Builds the tRPC context from a fetch Request: the runtime and the session's user (or null).
import { resolveSession, tokenFromCookieHeader } from "../auth/session-store";
import type { ConsoleRuntime } from "../runtime/runtime";
import type { TrpcContext } from "./init";

export function createTrpcContext(rt: ConsoleRuntime, req: Request): TrpcContext {
  const user = resolveSession(rt.db, tokenFromCookieHeader(req.headers.get("cookie")));
  return { rt, user };
}
