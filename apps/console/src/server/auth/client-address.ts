// Who sent a request. The socket's peer (stamped by peer-address.ts) is the truth; X-Forwarded-For,
// -Host and -Proto are believed only when that peer is a trusted proxy (MERIDIAN_TRUSTED_PROXIES).
// Otherwise a client could pick its own address (and dodge the login rate limit, or write a forged
// address into the audit log) or its own host (and pass the CSRF origin check).
import "server-only";
import { isIP } from "node:net";
import { normaliseAddress, peerAddress } from "./peer-address";
import type { RequestSecurity } from "./request-security";

export interface Client {
  /** The address the console attributes the request to: the peer, or, behind trusted proxies, the
   * nearest X-Forwarded-For hop that is not itself a trusted proxy. "unknown" when the peer is. */
  address: string;
  /** The TCP peer; null when it could not be determined (then nothing forwarded is believed). */
  peer: string | null;
  /** The peer is a trusted proxy, so its X-Forwarded-* headers are believed. */
  viaTrustedProxy: boolean;
  /** Whether `address` names the client: the peer itself, or an X-Forwarded-For hop a trusted proxy
   * wrote. False when a trusted proxy named no client (no header, or no address in its last hop):
   * `address` is then the proxy's own. */
  named: boolean;
}

/** "1.2.3.4" from "1.2.3.4:5678", "::1" from "[::1]:5678"; null for anything that is not an IP. */
function forwardedIp(entry: string): string | null {
  let value = entry.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(value);
  if (bracketed) value = bracketed[1]!;
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(value)) value = value.slice(0, value.lastIndexOf(":"));
  return isIP(value) ? normaliseAddress(value) : null;
}

function headerList(headers: Headers, name: string): string[] {
  const value = headers.get(name);
  return value
    ? value
        .split(",")
        .map((part) => part.trim())
        .filter((part) => part !== "")
    : [];
}

export function identifyClient(headers: Headers, security: RequestSecurity): Client {
  const peer = peerAddress(headers);
  if (!peer) return { address: "unknown", peer: null, viaTrustedProxy: false, named: false };
  const proxies = security.trustedProxies;
  if (!proxies.has(peer)) return { address: peer, peer, viaTrustedProxy: false, named: true };
  // Each proxy appends the address it received the request from, so walking right to left past
  // the trusted proxies reaches the first hop none of them vouches for: the client. Entries left of
  // it were written by the client and are ignored.
  let address = peer;
  let named = false;
  for (const entry of headerList(headers, "x-forwarded-for").reverse()) {
    const ip = forwardedIp(entry);
    if (!ip) break;
    address = ip;
    named = true;
    if (!proxies.has(ip)) break;
  }
  return { address, peer, viaTrustedProxy: true, named };
}

/** The value the nearest trusted proxy set for an X-Forwarded-* header (its last entry), or null when
 * the peer is not a trusted proxy. */
export function forwardedHeader(headers: Headers, client: Client, name: "x-forwarded-host" | "x-forwarded-proto"): string | null {
  if (!client.viaTrustedProxy) return null;
  return headerList(headers, name).at(-1) ?? null;
}

/** Whether browsers reach the console over https (for the cookie's Secure flag). */
export function servedOverHttps(headers: Headers, client: Client, security: RequestSecurity): boolean {
  if (security.publicOrigin) return security.publicOrigin.startsWith("https:");
  return forwardedHeader(headers, client, "x-forwarded-proto") === "https";
}
