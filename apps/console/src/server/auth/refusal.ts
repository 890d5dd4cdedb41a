// A refused request, answered and recorded the same way everywhere: a JSON error for the caller, a
// warn line in the log (no stack: nothing failed), and a row in the audit log (security-audit.ts).
import "server-only";
import type { Logger } from "pino";
import type { Queryable } from "@meridian/db";
import { jsonError } from "../http";
import { securityAuditor, type SecurityAuditor, type SecurityEvent } from "./security-audit";

export interface RefusalSink {
  readonly store: Queryable;
  readonly log: Logger;
}

/** Resolves once the audit row is written, so the refusal is on record before it is answered. */
export async function recordRefusal(sink: RefusalSink, event: SecurityEvent, auditor: SecurityAuditor = securityAuditor()): Promise<void> {
  await auditor.record(sink.store, event);
  sink.log.warn(
    { action: event.action, actor: event.actor, target: event.target, address: event.address, status: event.status, reason: event.reason },
    "request refused",
  );
}

export async function refuse(
  sink: RefusalSink,
  event: SecurityEvent,
  message: string,
  options: { headers?: Record<string, string>; auditor?: SecurityAuditor } = {},
): Promise<Response> {
  await recordRefusal(sink, event, options.auditor);
  return jsonError(event.status, message, options.headers);
}
