// The /api/trpc request handler as a plain function of a fetch Request (testable without Next).
// Mutations (POST) must come from this console's own origin (CSRF defence).
import "server-only";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import type { Logger } from "pino";
import { isSameOrigin } from "../auth/origin";
import { jsonError } from "../http";
import type { ServiceRuntime } from "../services/context";
import { createTrpcContext } from "./context";
import { appRouter } from "./root";

export function handleTrpcRequest(rt: ServiceRuntime & { readonly log: Logger }, req: Request, endpoint = "/api/trpc"): Promise<Response> | Response {
  if (req.method !== "GET" && !isSameOrigin(req.headers)) {
    return jsonError(403, "cross-origin request refused (the Origin header must match the console's host)");
  }
  return fetchRequestHandler({
    endpoint,
    req,
    router: appRouter,
    createContext: () => createTrpcContext(rt, req),
    onError({ error, path }) {
      if (error.code === "INTERNAL_SERVER_ERROR") rt.log.error({ path, err: error.cause ?? error }, "tRPC procedure failed");
    },
  });
}
