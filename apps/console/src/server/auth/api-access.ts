// Access to the machine-readable APIs (/api/entrypoints): the LB bearer token (replay clients,
// scripts) or a logged-in session. A refusal is a 401, audited with the client's address.
import "server-only";
import { hasBearer } from "../http";
import { identifyClient } from "./client-address";
import { type RefusalSink, refuse } from "./refusal";
import { DEFAULT_REQUEST_SECURITY, type RequestSecurity } from "./request-security";
import type { SecurityAuditor } from "./security-audit";
import { resolveSession, tokenFromCookieHeader } from "./session-store";

/** What the check uses: the database (sessions, audit), the log (refusals) and the LB token. */
export interface ApiAccessRuntime extends RefusalSink {
  readonly options: { readonly lbToken: string };
}

/** null when the request may proceed; otherwise the 401 to answer. */
export function requireTokenOrSession(
  rt: ApiAccessRuntime,
  req: Request,
  options: { security?: RequestSecurity; auditor?: SecurityAuditor } = {},
): Response | null {
  if (hasBearer(req, rt.options.lbToken)) return null;
  if (resolveSession(rt.db, tokenFromCookieHeader(req.headers.get("cookie"))) !== null) return null;
  const client = identifyClient(req.headers, options.security ?? DEFAULT_REQUEST_SECURITY);
  const reason = req.headers.has("authorization") ? "wrong bearer token" : "no bearer token and no session";
  const event = {
    action: "auth.denied",
    actor: "anonymous",
    target: `api:${new URL(req.url).pathname}`,
    address: client.address,
    status: 401,
    reason,
  } as const;
  return refuse(rt, event, "a bearer token or a session is required", { auditor: options.auditor });
}
