// CSRF defence for every state-changing request (tRPC mutations, login, logout): the browser's Origin
// must be the console's own. SameSite=Strict cookies already stop most cross-site requests; this
// also covers same-site subdomains and a forged X-Forwarded-Host.
//
// The console's own origin is MERIDIAN_PUBLIC_URL when set (scheme, host and port must match), and
// otherwise the host the request was addressed to: the Host header, or X-Forwarded-Host when the
// peer is a trusted proxy. A browser cannot set Host or the forwarded headers on a cross-site request,
// but any client can: a forwarded host from an untrusted peer is ignored.
//
// First of all, the host itself must be one the console answers to (host-check.ts): otherwise a
// DNS-rebinding page, whose Origin equals the Host it sends, passed.
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
  const addressed = checkHost(headers, client, security);
  if (!addressed.ok) return addressed;
  const origin = headers.get("origin");
  if (!origin || origin === "null") {
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
