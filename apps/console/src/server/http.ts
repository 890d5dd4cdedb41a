// Helpers for the route handlers (app/api/**): JSON responses, domain errors, bearer tokens. The
// client's address and the request's scheme are judged in auth/client-address.ts.
import { timingSafeEqual, createHash } from "node:crypto";
import { DomainError } from "./errors";

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers },
  });
}

export function jsonError(status: number, message: string, headers: Record<string, string> = {}): Response {
  return json({ error: { message } }, status, headers);
}

const STATUS: Record<DomainError["kind"], number> = { "not-found": 404, conflict: 409, invalid: 400, precondition: 412, busy: 429 };

export function domainErrorResponse(error: unknown): Response {
  if (error instanceof DomainError) return jsonError(STATUS[error.kind], error.message);
  throw error;
}

/** Constant-time bearer token check (hashing first makes the lengths equal). */
export function hasBearer(req: Request, expected: string): boolean {
  const header = req.headers.get("authorization") ?? "";
  const match = /^Bearer\s+(.+)$/i.exec(header);
  if (!match) return false;
  const a = createHash("sha256").update(match[1]!.trim()).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}
