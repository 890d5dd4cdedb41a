// Builds the tRPC context from a fetch Request: the runtime and the session's user (or null).
import "server-only";
import { resolveSession, tokenFromCookieHeader } from "../auth/session-store";
import type { ServiceRuntime } from "../services/context";
import type { TrpcContext } from "./init";

export async function createTrpcContext(rt: ServiceRuntime, req: Request): Promise<TrpcContext> {
  const user = await resolveSession(rt.store, tokenFromCookieHeader(req.headers.get("cookie")));
  return { rt, user };
}
