// Helpers for the route handlers (app/api/**): JSON responses. The client's address
// and the request's scheme are judged in auth/client-address.ts.
import "server-only";

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers },
  });
}

export function jsonError(status: number, message: string, headers: Record<string, string> = {}): Response {
  return json({ error: { message } }, status, headers);
}
