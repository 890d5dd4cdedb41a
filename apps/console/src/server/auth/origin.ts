// CSRF defence for mutations: the browser's Origin header must name this very host. SameSite=Strict
// cookies already stop most cross-site requests; this also covers same-site subdomains and old
// browsers. A mutation without an Origin header is refused.
import "server-only";

export function isSameOrigin(headers: Headers): boolean {
  const origin = headers.get("origin");
  if (!origin || origin === "null") return false;
  const host = headers.get("x-forwarded-host") ?? headers.get("host");
  if (!host) return false;
  try {
    return new URL(origin).host === host.split(",")[0]!.trim();
  } catch {
    return false;
  }
}
