// DNS-rebinding defence: a request must be addressed to a host name that is the console's. A page on
// http://attacker.example:3000 whose name the attacker re-points at 127.0.0.1 reaches a console on
// the operator's machine, and is same-origin with itself: its Origin equals its Host, so the CSRF
// check alone let it log in (with the demo's printed password) and run mutations.
//
// Accepted names (the port is never compared: rebinding is about who controls the name, and the CSRF
// check compares the full origin, port included; a port check would refuse `next start -p 4000`
// without MERIDIAN_PORT, or a container's mapped port, for no gain):
// - MERIDIAN_PUBLIC_URL's host name;
// - "localhost" and any IP address literal (127.0.0.1, [::1], 192.168.1.5 under MERIDIAN_HOST=0.0.0.0):
//   no DNS answer can re-point those, so a browser sends them only to the server they name;
// - the machine's own name, and its fully qualified name from /etc/hosts (machine-names.ts);
// - the names in MERIDIAN_ALLOWED_HOSTS (e.g. a reverse proxy's name, another name of the machine).
//
// With MERIDIAN_PUBLIC_URL set, a request that carries an Origin is judged by that Origin alone
// (origin-check.ts); this check guards the others (a login without Origin, a loopback /metrics).
import "server-only";
import { forwardedHeader, type Client } from "./client-address";
import type { RequestSecurity } from "./request-security";

/** The host a request was addressed to: X-Forwarded-Host when the peer is a trusted proxy and set
 * it, else the Host header; null when neither names one. */
export function requestHost(headers: Headers, client: Client): string | null {
  return forwardedHeader(headers, client, "x-forwarded-host") ?? headers.get("host");
}

export type HostVerdict = { ok: true } | { ok: false; reason: string };

/** Whether the request is addressed to the console. A request naming no host passes (browsers always
 * send one; the origin check refuses a mutation without it). Without an allow-list (tests that build
 * RequestSecurity by hand) every host passes: the console itself always has one (request-security.ts). */
export function checkHost(headers: Headers, client: Client, security: RequestSecurity): HostVerdict {
  const host = requestHost(headers, client);
  if (host === null || security.allowedHosts === undefined || security.allowedHosts.allows(host)) return { ok: true };
  return {
    ok: false,
    reason: `the request is addressed to host ${host.slice(0, 100)}, which is not this console's (MERIDIAN_PUBLIC_URL, MERIDIAN_ALLOWED_HOSTS)`,
  };
}
