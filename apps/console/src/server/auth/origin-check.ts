// CSRF defence for every state-changing request (tRPC mutations, login, logout): the browser's Origin
// must be the console's own. SameSite=Strict cookies already stop most cross-site requests; this
// also covers same-site subdomains and a forged X-Forwarded-Host.
//
// The console's own origin is MERIDIAN_PUBLIC_URL when set (scheme, host and port must match), and
// otherwise the host the request was addressed to: the Host header, or X-Forwarded-Host when the
// peer is a trusted proxy. A browser cannot set Host or the forwarded headers on a cross-site request,
// but any client can: a forwarded host from an untrusted peer is ignored.
//
// Without MERIDIAN_PUBLIC_URL, the host itself must first be one the console answers to
// (host-check.ts): otherwise a DNS-rebinding page, whose Origin equals the Host it sends, passed.
//
// With MERIDIAN_PUBLIC_URL, a request that carries an Origin is judged by the Origin alone, whatever
// its Host: a reverse proxy commonly rewrites Host to its upstream's name (nginx's default
// `proxy_pass http://meridian-console:3000` sends Host: meridian-console:3000 and no
// X-Forwarded-Host), and refusing that name locked every operator out. This stays safe against DNS
// rebinding: a rebound page's Origin is the name it was loaded from, the attacker's, and a browser
// writes Origin itself (no page can set it), so only a page loaded from the public URL can send it;
// a non-browser client can forge Origin, but it can forge Host just as well, so the host check
// never stopped it. A request without an Origin (a script's login) still has its host checked.
import "server-only";
import type { Client } from "./client-address";
import { checkHost, requestHost } from "./host-check";
import type { RequestSecurity } from "./request-security";

export type OriginVerdict = { ok: true } | { ok: false; reason: string };

export interface OriginCheckOptions {
  /** Accept a request that carries neither Origin nor Sec-Fetch-Site: a script (curl), not a browser.
   * Used for login only: every browser in use sends Origin on a POST (and Sec-Fetch-Site since
   * 2019-2023), so such a request cannot be a cross-site form, and login carries no ambient
   * credential to abuse. Cookie-authenticated mutations still need an Origin. */
  allowNonBrowser?: boolean;
}

export function checkOrigin(headers: Headers, client: Client, security: RequestSecurity, options: OriginCheckOptions = {}): OriginVerdict {
  const origin = headers.get("origin");
  const hasOrigin = Boolean(origin) && origin !== "null";
  if (!(security.publicOrigin && hasOrigin)) {
    const addressed = checkHost(headers, client, security);
    if (!addressed.ok) return addressed;
  }
  // `Origin: null` comes from browsers only (a sandboxed frame, a data: document): never a script's
  // login, so it is refused like a foreign origin, not let through as a missing one.
  if (origin === "null") return { ok: false, reason: "the Origin header is null (an opaque document)" };
  if (!origin) {
    const fetchSite = headers.get("sec-fetch-site");
    if (options.allowNonBrowser && (fetchSite === null || fetchSite === "same-origin")) return { ok: true };
    return { ok: false, reason: "the Origin header is missing" };
  }
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return { ok: false, reason: `the Origin header "${origin.slice(0, 100)}" is not a URL` };
  }
  if (security.publicOrigin) {
    return parsed.origin === security.publicOrigin
      ? { ok: true }
      : { ok: false, reason: `Origin ${parsed.origin} is not the console's public URL ${security.publicOrigin}` };
  }
  const host = requestHost(headers, client);
  if (!host) return { ok: false, reason: "the request names no host" };
  return parsed.host === host.toLowerCase() ? { ok: true } : { ok: false, reason: `Origin ${parsed.origin} does not match the console's host ${host}` };
}
