// What the console needs to know about its own network position to judge a request: which peers are
// reverse proxies it trusts, and the public URL browsers use. Both come from env (src/env.ts); tests
// and a console with neither setting use DEFAULT_REQUEST_SECURITY (trust no proxy, compare Origin
// with the Host header).
import "server-only";
import { getEnv } from "../../env";
import { NO_TRUSTED_PROXIES, type TrustedProxies } from "./trusted-proxies";

export interface RequestSecurity {
  trustedProxies: TrustedProxies;
  /** "https://console.example.com" (an origin: scheme, host, port), or null when not configured. */
  publicOrigin: string | null;
}

export const DEFAULT_REQUEST_SECURITY: RequestSecurity = { trustedProxies: NO_TRUSTED_PROXIES, publicOrigin: null };

let cached: RequestSecurity | undefined;

/** The settings of this console process (MERIDIAN_TRUSTED_PROXIES, MERIDIAN_PUBLIC_URL). */
export function requestSecurityFromEnv(): RequestSecurity {
  if (!cached) {
    const env = getEnv();
    cached = { trustedProxies: env.MERIDIAN_TRUSTED_PROXIES, publicOrigin: env.MERIDIAN_PUBLIC_URL ?? null };
  }
  return cached;
}
