// Next 16 proxy (formerly middleware): a cheap gate in front of every route. Requests without a
// session cookie are sent to /login (pages) or answered 401 (APIs). Whether the cookie is a valid
// session is decided by the server (tRPC context, getSessionUser() in the layout), not here.
import { NextResponse, type NextRequest } from "next/server";

const SESSION_COOKIE = "meridian_session";
/** Paths that answer without a session (each checks what it needs itself). */
const PUBLIC_PATHS = new Set(["/login", "/api/auth/login", "/api/auth/logout", "/api/health", "/api/entrypoints", "/metrics"]);
/** tRPC checks the session per procedure (auth.me needs none) and audits each 401 with the client's
 * address, which this gate cannot do (it has no database). */
const PUBLIC_PREFIXES = ["/api/trpc/"];

export function proxy(request: NextRequest): NextResponse {
  const { pathname, search } = request.nextUrl;
  if (PUBLIC_PATHS.has(pathname) || PUBLIC_PREFIXES.some((prefix) => pathname.startsWith(prefix)) || request.cookies.has(SESSION_COOKIE)) {
    return NextResponse.next();
  }
  if (pathname.startsWith("/api/")) {
    return NextResponse.json({ error: { message: "log in to use the console" } }, { status: 401 });
  }
  const login = new URL("/login", request.url);
  login.searchParams.set("next", `${pathname}${search}`);
  return NextResponse.redirect(login);
}

export const config = {
  // Everything but Next's static assets.
  matcher: ["/((?!_next/static|_next/image|favicon.ico|robots.txt).*)"],
};
