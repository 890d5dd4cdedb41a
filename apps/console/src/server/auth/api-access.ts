// Access to the machine-readable APIs (/api/entrypoints): a logged-in session, the machine token
// (MERIDIAN_ENTRYPOINTS_TOKEN: replay clients, the demo's load generator) or any active client API
// key (a client holding a key may learn where to send). The console only verifies these, so it keeps
// their SHA-256 digests, never the secrets, and compares digests in constant time. A refusal is a
// 401, audited with the client's address.
import "server-only";
import { and, eq, isNull } from "drizzle-orm";
import { bearerOf, clientKeyIdOf, digestsEqual, sha256 } from "@meridian/protocol/credentials";
import { identifyClient } from "./client-address";
import { type RefusalSink, refuse } from "./refusal";
import { DEFAULT_REQUEST_SECURITY, type RequestSecurity } from "./request-security";
import type { SecurityAuditor } from "./security-audit";
import { resolveSession, tokenFromCookieHeader } from "./session-store";

/** What the check uses: the database (sessions, client keys, audit), the log (refusals) and the
 * machine token's digest. */
export interface ApiAccessRuntime extends RefusalSink {
  readonly options: { readonly entrypointsTokenSha256: string | null };
}

// Compared against when no machine token is configured, so the work does not depend on it.
const NO_TOKEN = sha256("meridian: no entrypoints token configured");

async function bearerAccepted(rt: ApiAccessRuntime, bearer: string): Promise<boolean> {
  const { db, tables } = rt.store;
  const { clientKeys } = tables;
  const digest = sha256(bearer);
  const machine = rt.options.entrypointsTokenSha256;
  const machineMatch = digestsEqual(digest, machine ? Buffer.from(machine, "hex") : NO_TOKEN) && machine !== null;
  const keyId = clientKeyIdOf(bearer);
  const [key] = keyId
    ? await db
        .select()
        .from(clientKeys)
        .where(and(eq(clientKeys.id, keyId), isNull(clientKeys.revokedAt)))
        .limit(1)
    : [];
  const keyMatch = digestsEqual(digest, key ? Buffer.from(key.sha256, "hex") : NO_TOKEN) && key !== undefined;
  return machineMatch || keyMatch;
}

/** null when the request may proceed; otherwise the 401 to answer. */
export async function requireTokenOrSession(
  rt: ApiAccessRuntime,
  req: Request,
  options: { security?: RequestSecurity; auditor?: SecurityAuditor } = {},
): Promise<Response | null> {
  const bearer = bearerOf(req.headers.get("authorization"));
  if (bearer !== null && (await bearerAccepted(rt, bearer))) return null;
  if ((await resolveSession(rt.store, tokenFromCookieHeader(req.headers.get("cookie")))) !== null) return null;
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
  return await refuse(rt, event, "a bearer token or a session is required", { auditor: options.auditor });
}
