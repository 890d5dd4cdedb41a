// What the console needs to know about its own network position to judge a request: which peers are
// reverse proxies it trusts, the public URL browsers use, and the host names it answers to. All come
// from env (src/env.ts). DEFAULT_REQUEST_SECURITY (trust no proxy, compare Origin with the Host
// header, check no host name) is for tests that build requests by hand; the console's route
// handlers always pass requestSecurityFromEnv(), whose host allow-list is never empty.
import "server-only";
import { type ConsoleEnv, getEnv } from "../../env";
import { AllowedHosts, boundHostNames } from "./allowed-hosts";
import { NO_TRUSTED_PROXIES, type TrustedProxies } from "./trusted-proxies";

export interface RequestSecurity {
  trustedProxies: TrustedProxies;
  /** "https://console.example.com" (an origin: scheme, host, port), or null when not configured. */
  publicOrigin: string | null;
  /** The host names requests may be addressed to (host-check.ts); absent: not checked (tests that
   * build requests by hand; the console always sets it). */
  allowedHosts?: AllowedHosts;
}

export const DEFAULT_REQUEST_SECURITY: RequestSecurity = { trustedProxies: NO_TRUSTED_PROXIES, publicOrigin: null };

/** The settings of a console configured by `env` (MERIDIAN_TRUSTED_PROXIES, MERIDIAN_PUBLIC_URL,
 * MERIDIAN_ALLOWED_HOSTS, and MERIDIAN_HOST when it names the console). */
export function requestSecurityOf(
  env: Pick<ConsoleEnv, "MERIDIAN_TRUSTED_PROXIES" | "MERIDIAN_PUBLIC_URL" | "MERIDIAN_ALLOWED_HOSTS" | "MERIDIAN_HOST">,
): RequestSecurity {
  const publicOrigin = env.MERIDIAN_PUBLIC_URL ?? null;
  const names = [...env.MERIDIAN_ALLOWED_HOSTS, ...boundHostNames(env.MERIDIAN_HOST)];
  return { trustedProxies: env.MERIDIAN_TRUSTED_PROXIES, publicOrigin, allowedHosts: new AllowedHosts(publicOrigin, names) };
}

let cached: RequestSecurity | undefined;

/** The settings of this console process. */
export function requestSecurityFromEnv(): RequestSecurity {
  cached ??= requestSecurityOf(getEnv());
  return cached;
}
