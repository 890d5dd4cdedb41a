// What happens to a tRPC error after it is answered. A bug (INTERNAL_SERVER_ERROR) is logged at
// error with its stack, under the id its answer gives (internal-errors.ts). A database locked by
// another process (503, SERVICE_UNAVAILABLE) is a transient fault, not a bug: one warn line, no stack.
// 401 and 403 are refusals: logged at warn and written to the audit log with the client's address
// (auth/security-audit.ts). Every other 4xx is an operator's mistake or a state the operator must
// resolve (unknown id, bounds, "not failed over"): one info line, no stack.
import "server-only";
import type { TRPCError } from "@trpc/server";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";
import type { Client } from "../auth/client-address";
import { recordRefusal, type RefusalSink } from "../auth/refusal";
import type { SecurityAuditor } from "../auth/security-audit";
import { errorIdOf, isUnexpected } from "./internal-errors";

export interface TrpcErrorReport {
  error: TRPCError;
  path: string | undefined;
  client: Client;
  username: string | null;
}

/** Resolves once a refusal's audit row is written (the handler awaits it before answering). */
export async function reportTrpcError(sink: RefusalSink, report: TrpcErrorReport, auditor?: SecurityAuditor): Promise<void> {
  const { error, path, client } = report;
  const status = getHTTPStatusCodeFromError(error);
  if (error.code === "SERVICE_UNAVAILABLE") {
    sink.log.warn({ path, status, message: error.message, address: client.address }, "tRPC request failed on a transient fault");
    return;
  }
  if (error.code === "INTERNAL_SERVER_ERROR" || status >= 500) {
    // The operator's answer named this id in place of the message (internal-errors.ts).
    const errorId = isUnexpected(error) ? errorIdOf(error) : undefined;
    sink.log.error({ path, errorId, err: error.cause ?? error }, "tRPC procedure failed");
    return;
  }
  if (status === 401 || status === 403) {
    const event = {
      action: "auth.denied",
      actor: report.username ?? "anonymous",
      target: `trpc:${path ?? "?"}`,
      address: client.address,
      status,
      reason: error.message,
    } as const;
    await recordRefusal(sink, event, auditor);
    return;
  }
  sink.log.info({ path, code: error.code, status, message: error.message, address: client.address }, "tRPC request refused");
}
