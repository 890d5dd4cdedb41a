// The login and logout flows behind /api/auth/*, as plain functions of a fetch Request so they can
// be tested without Next.
import "server-only";
import type { Db } from "@meridian/db";
import { z } from "zod";
import { recordAudit } from "../audit-trail";
import { clientIp, isSecureRequest, json, jsonError } from "../http";
import { isSameOrigin } from "./origin";
import { LoginRateLimiter } from "./rate-limit";
import { clearedSessionCookie, createSession, deleteSession, resolveSession, sessionCookie, tokenFromCookieHeader } from "./session-store";
import { checkCredentials } from "./users";

const Credentials = z.object({
  username: z.string().trim().min(1, { error: "username is required" }).max(100),
  password: z.string().min(1, { error: "password is required" }).max(1000),
  next: z.string().optional(),
});

/** What the login flows use: the database and the session lifetime. */
export interface AuthRuntime {
  readonly db: Db;
  readonly options: { readonly sessionTtlMs: number };
}

const LIMITER_KEY = Symbol.for("meridian.console.login-limiter");
/** One limiter per process (it must survive module re-evaluation like the runtime). */
function loginLimiter(): LoginRateLimiter {
  const holder = globalThis as { [LIMITER_KEY]?: LoginRateLimiter };
  holder[LIMITER_KEY] ??= new LoginRateLimiter(5, 60_000);
  return holder[LIMITER_KEY];
}

/** Only same-site paths: an open redirect on the login form would be a phishing aid. */
function safeNext(next: string | undefined): string {
  return next?.startsWith("/") && !next.startsWith("//") && !next.startsWith("/\\") ? next : "/";
}

export async function handleLogin(rt: AuthRuntime, req: Request, limiter: LoginRateLimiter = loginLimiter()): Promise<Response> {
  if (!isSameOrigin(req.headers)) return jsonError(403, "cross-origin login refused (the Origin header must match the console's host)");
  const contentType = req.headers.get("content-type") ?? "";
  const isForm = contentType.includes("application/x-www-form-urlencoded") || contentType.includes("multipart/form-data");
  let raw: unknown;
  try {
    raw = isForm ? Object.fromEntries((await req.formData()).entries()) : await req.json();
  } catch {
    return jsonError(400, "expected a JSON or form body with username and password");
  }
  const parsed = Credentials.safeParse(raw);
  if (!parsed.success) return jsonError(400, parsed.error.issues.map((i) => i.message).join("; "));
  const { username, password, next } = parsed.data;
  const ip = clientIp(req);
  const wait = limiter.retryAfter(ip, username);
  if (wait > 0) {
    return jsonError(429, `too many failed login attempts; try again in ${wait} s`, { "retry-after": String(wait) });
  }
  const user = checkCredentials(rt.db, username, password);
  const secure = isSecureRequest(req);
  if (!user) {
    limiter.fail(ip, username);
    if (isForm) return new Response(null, { status: 303, headers: { location: `/login?error=invalid&next=${encodeURIComponent(safeNext(next))}` } });
    return jsonError(401, "invalid username or password");
  }
  limiter.succeed(ip, username);
  const session = createSession(rt.db, user.id, rt.options.sessionTtlMs);
  recordAudit(rt.db, { username: user.username, role: user.role }, "auth.login", `user:${user.username}`, null, { ip });
  const cookie = sessionCookie(session.token, session.expiresAt, secure);
  if (isForm) return new Response(null, { status: 303, headers: { location: safeNext(next), "set-cookie": cookie } });
  return json({ ok: true, user: { username: user.username, role: user.role } }, 200, { "set-cookie": cookie });
}

export function handleLogout(rt: AuthRuntime, req: Request): Response {
  if (!isSameOrigin(req.headers)) return jsonError(403, "cross-origin logout refused");
  const token = tokenFromCookieHeader(req.headers.get("cookie"));
  const user = resolveSession(rt.db, token);
  deleteSession(rt.db, token);
  if (user) recordAudit(rt.db, { username: user.username, role: user.role }, "auth.logout", `user:${user.username}`, null, null);
  const cookie = clearedSessionCookie(isSecureRequest(req));
  const accept = req.headers.get("accept") ?? "";
  if (accept.includes("text/html")) return new Response(null, { status: 303, headers: { location: "/login", "set-cookie": cookie } });
  return json({ ok: true }, 200, { "set-cookie": cookie });
}
