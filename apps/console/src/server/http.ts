// Helpers for the route handlers (app/api/**): JSON responses, bearer tokens. The client's address
// and the request's scheme are judged in auth/client-address.ts.
import "server-only";
import { timingSafeEqual, createHash } from "node:crypto";

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers },
  });
}

export function jsonError(status: number, message: string, headers: Record<string, string> = {}): Response {
  return json({ error: { message } }, status, headers);
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
