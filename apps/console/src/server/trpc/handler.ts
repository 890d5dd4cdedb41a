// The /api/trpc request handler as a plain function of a fetch Request (testable without Next).
// Mutations (anything but GET) must come from this console's own origin (CSRF defence,
// auth/origin-check.ts); refusals and errors are reported by report-error.ts.
import "server-only";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import type { Logger } from "pino";
import { identifyClient } from "../auth/client-address";
import { checkOrigin } from "../auth/origin-check";
import { refuse } from "../auth/refusal";
import { DEFAULT_REQUEST_SECURITY, type RequestSecurity } from "../auth/request-security";
import type { SecurityAuditor } from "../auth/security-audit";
import type { ServiceRuntime } from "../services/context";
import { createTrpcContext } from "./context";
import { reportTrpcError } from "./report-error";
import { appRouter } from "./root";

export interface TrpcRouteOptions {
  endpoint?: string;
  security?: RequestSecurity;
  auditor?: SecurityAuditor;
}

export async function handleTrpcRequest(rt: ServiceRuntime & { readonly log: Logger }, req: Request, options: TrpcRouteOptions = {}): Promise<Response> {
  const endpoint = options.endpoint ?? "/api/trpc";
  const security = options.security ?? DEFAULT_REQUEST_SECURITY;
  const client = identifyClient(req.headers, security);
  const ctx = await createTrpcContext(rt, req);
  if (req.method !== "GET") {
    const origin = checkOrigin(req.headers, client, security);
    if (!origin.ok) {
      const path = new URL(req.url).pathname.slice(endpoint.length + 1) || "?";
      const event = {
        action: "auth.denied",
        actor: ctx.user?.username ?? "anonymous",
        target: `trpc:${path}`,
        address: client.address,
        status: 403,
        reason: origin.reason,
      } as const;
      return await refuse(rt, event, `cross-origin request refused: ${origin.reason}`, { auditor: options.auditor });
    }
  }
  // tRPC calls onError without awaiting it: the reports (a refusal's audit row) are collected and
  // awaited before the response goes out, and a failed report is logged, never left unhandled.
  const reports: Promise<void>[] = [];
  const response = await fetchRequestHandler({
    endpoint,
    req,
    router: appRouter,
    createContext: () => ctx,
    onError({ error, path }) {
      reports.push(
        reportTrpcError(rt, { error, path, client, username: ctx.user?.username ?? null }, options.auditor).catch((reportError: unknown) => {
          rt.log.error({ path, err: reportError }, "could not record a refused tRPC request");
        }),
      );
    },
  });
  await Promise.all(reports);
  return response;
}
