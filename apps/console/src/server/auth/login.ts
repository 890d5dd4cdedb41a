// The login and logout flows behind /api/auth/*, as plain functions of a fetch Request so they can
// be tested without Next.
import "server-only";
import type { Queryable } from "@meridian/db";
import { z } from "zod";
import type { Logger } from "pino";
import { safeNextPath } from "../../lib/safe-redirect";
import { recordAudit } from "../audit-trail";
import { json, jsonError } from "../http";
import { identifyClient, servedOverHttps } from "./client-address";
import { checkOrigin } from "./origin-check";
import { LoginThrottle } from "./rate-limit";
import { passwordCheckGate, type PasswordCheckGate } from "./password-check-gate";
import { recordRefusal, refuse } from "./refusal";
import { DEFAULT_REQUEST_SECURITY, type RequestSecurity } from "./request-security";
import { securityAuditor, type SecurityAuditor } from "./security-audit";
import { clearedSessionCookie, createSession, deleteSession, resolveSession, sessionCookie, tokenFromCookieHeader } from "./session-store";
import { type CredentialCheck, checkCredentials, isKnownUser } from "./users";

const Credentials = z.object({
  username: z.string().trim().min(1, { error: "username is required" }).max(100),
  password: z.string().min(1, { error: "password is required" }).max(1000),
  next: z.string().optional(),
});

const THROTTLE_KEY = Symbol.for("meridian.console.login-throttle");
/** One throttle per process (it must survive module re-evaluation like the runtime). */
function loginThrottle(): LoginThrottle {
  const holder = globalThis as { [THROTTLE_KEY]?: LoginThrottle };
  holder[THROTTLE_KEY] ??= new LoginThrottle();
  return holder[THROTTLE_KEY];
}

/** What the login flows use: the database, the log (for refusals) and the session lifetime. */
export interface AuthRuntime {
  readonly store: Queryable;
  readonly log: Logger;
  readonly options: { readonly sessionTtlMs: number };
}

export interface AuthRouteOptions {
  security?: RequestSecurity;
  throttle?: LoginThrottle;
  auditor?: SecurityAuditor;
  gate?: PasswordCheckGate;
}

/** The audit target of a refused login whose username names no stored user (loginTarget). */
export const UNKNOWN_USER_TARGET = "user:(unknown)";

/** Why a login form post was sent back to /login (app/login/page.tsx words each one). */
type FormError = "invalid" | "throttled" | "refused" | "malformed";

/** The answer to a refused login: for a form posted without the script (`isForm`), a redirect back
 * to the login page saying why, as for a wrong password; before, a throttled, cross-origin or
 * malformed form post showed the raw JSON error as the page, with no way back. */
function loginRefusal(isForm: boolean, status: number, message: string, form: { error: FormError; next: string; retryAfter?: number }): Response {
  const retry: Record<string, string> = form.retryAfter === undefined ? {} : { "retry-after": String(form.retryAfter) };
  if (!isForm) return jsonError(status, message, retry);
  const query = new URLSearchParams({ error: form.error, ...(form.retryAfter === undefined ? {} : { retry: String(form.retryAfter) }), next: form.next });
  return new Response(null, { status: 303, headers: { location: `/login?${query}`, ...retry } });
}

/** The audit target of a refused login. Judgement: the typed name is recorded only when it names a
 * stored user, else a fixed marker (the address is kept). The audit log is readable by viewers, and
 * a password typed into the username field (a common slip) was shown to every one of them; an
 * unknown name tells an operator nothing the address and the reason do not. */
async function loginTarget(rt: AuthRuntime, username: string, known?: boolean): Promise<string> {
  return (known ?? (await isKnownUser(rt.store, username))) ? `user:${username}` : UNKNOWN_USER_TARGET;
}

export async function handleLogin(rt: AuthRuntime, req: Request, options: AuthRouteOptions = {}): Promise<Response> {
  const security = options.security ?? DEFAULT_REQUEST_SECURITY;
  const throttle = options.throttle ?? loginThrottle();
  const auditor = options.auditor ?? securityAuditor();
  const gate = options.gate ?? passwordCheckGate();
  const client = identifyClient(req.headers, security);
  const contentType = req.headers.get("content-type") ?? "";
  const isForm = contentType.includes("application/x-www-form-urlencoded") || contentType.includes("multipart/form-data");
  const origin = checkOrigin(req.headers, client, security, { allowNonBrowser: true });
  if (!origin.ok) {
    const event = {
      action: "auth.denied",
      actor: "anonymous",
      target: "api:/api/auth/login",
      address: client.address,
      status: 403,
      reason: origin.reason,
    } as const;
    await recordRefusal(rt, event, auditor);
    return loginRefusal(isForm, 403, `cross-origin login refused: ${origin.reason}`, { error: "refused", next: "/" });
  }
  let raw: unknown;
  try {
    raw = isForm ? Object.fromEntries((await req.formData()).entries()) : await req.json();
  } catch {
    return loginRefusal(isForm, 400, "expected a JSON or form body with username and password", { error: "malformed", next: "/" });
  }
  const parsed = Credentials.safeParse(raw);
  if (!parsed.success) {
    const next = safeNextPath(typeof (raw as { next?: unknown } | null)?.next === "string" ? (raw as { next: string }).next : undefined);
    return loginRefusal(isForm, 400, parsed.error.issues.map((i) => i.message).join("; "), { error: "malformed", next });
  }
  const { username, password } = parsed.data;
  const next = safeNextPath(parsed.data.next);
  /** A 429 before the password is checked: audited with why, answered with when to try again. */
  const throttled = async (reason: string, message: string, retryAfter: number): Promise<Response> => {
    const target = await loginTarget(rt, username);
    await recordRefusal(rt, { action: "auth.throttled", actor: "anonymous", target, address: client.address, status: 429, reason }, auditor);
    return loginRefusal(isForm, 429, message, { error: "throttled", next, retryAfter });
  };
  const wait = throttle.retryAfter(client.address, username);
  if (wait > 0) return throttled(`retry after ${wait} s`, `too many failed login attempts; try again in ${wait} s`, wait);
  if (!throttle.begin(username)) {
    return throttled("a login check for this account is in progress", "another login attempt for this account is being checked; try again in a moment", 1);
  }
  let checked: CredentialCheck | null;
  try {
    checked = await gate.run(() => checkCredentials(rt.store, username, password));
    if (checked && !checked.user) throttle.fail(client.address, username);
  } finally {
    throttle.end(username);
  }
  // Not a failure of this client's: the console is checking as many passwords as it will at once.
  if (!checked) return throttled("too many logins being checked", "too many logins are being checked; try again in a moment", 1);
  const { user } = checked;
  const secure = servedOverHttps(req.headers, client, security);
  if (!user) {
    const event = {
      action: "auth.login.failed",
      actor: "anonymous",
      target: await loginTarget(rt, username, checked.known),
      address: client.address,
      status: 401,
      reason: "invalid username or password",
    } as const;
    await recordRefusal(rt, event, auditor);
    return loginRefusal(isForm, 401, "invalid username or password", { error: "invalid", next });
  }
  throttle.succeed(client.address, username);
  const session = await createSession(rt.store, user.id, rt.options.sessionTtlMs);
  await recordAudit(rt.store, { username: user.username, role: user.role }, "auth.login", `user:${user.username}`, null, { address: client.address });
  const cookie = sessionCookie(session.token, session.expiresAt, secure);
  if (isForm) return new Response(null, { status: 303, headers: { location: next, "set-cookie": cookie } });
  return json({ ok: true, user: { username: user.username, role: user.role } }, 200, { "set-cookie": cookie });
}

export async function handleLogout(rt: AuthRuntime, req: Request, options: AuthRouteOptions = {}): Promise<Response> {
  const security = options.security ?? DEFAULT_REQUEST_SECURITY;
  const client = identifyClient(req.headers, security);
  const token = tokenFromCookieHeader(req.headers.get("cookie"));
  const user = await resolveSession(rt.store, token);
  const origin = checkOrigin(req.headers, client, security);
  if (!origin.ok) {
    const event = {
      action: "auth.denied",
      actor: user?.username ?? "anonymous",
      target: "api:/api/auth/logout",
      address: client.address,
      status: 403,
      reason: origin.reason,
    } as const;
    return await refuse(rt, event, `cross-origin logout refused: ${origin.reason}`, { auditor: options.auditor });
  }
  await deleteSession(rt.store, token);
  if (user)
    await recordAudit(rt.store, { username: user.username, role: user.role }, "auth.logout", `user:${user.username}`, null, { address: client.address });
  const cookie = clearedSessionCookie(servedOverHttps(req.headers, client, security));
  const accept = req.headers.get("accept") ?? "";
  if (accept.includes("text/html")) return new Response(null, { status: 303, headers: { location: "/login", "set-cookie": cookie } });
  return json({ ok: true }, 200, { "set-cookie": cookie });
}
