// Requests to the console's HTTP handlers the way `next start` delivers them: a fetch Request whose
// TCP peer is stamped (auth/peer-address.ts), a Host header, and by default a same-origin Origin.
// Shared by the auth, security and domain-error suites.
import "server-only";
import superjson from "superjson";
import { stampPeer } from "../auth/peer-address";
import type { RequestSecurity } from "../auth/request-security";
import type { SecurityAuditor } from "../auth/security-audit";
import { handleTrpcRequest } from "../trpc/handler";

const CONSOLE_HOST = "console.test";
export const CONSOLE_ORIGIN = `http://${CONSOLE_HOST}`;

export interface RequestOptions {
  /** The TCP peer (default 192.0.2.1); null: no stamp, as when the peer is unknown. */
  peer?: string | null;
  /** Origin header (default the console's own); null: none. */
  origin?: string | null;
  cookie?: string;
  headers?: Record<string, string>;
}

export function consoleHeaders(options: RequestOptions = {}): Headers {
  const headers = new Headers({ host: CONSOLE_HOST, ...options.headers });
  if (options.peer !== null) stampPeer(headers, options.peer ?? "192.0.2.1");
  if (options.origin !== null) headers.set("origin", options.origin ?? CONSOLE_ORIGIN);
  if (options.cookie) headers.set("cookie", options.cookie);
  return headers;
}

export function loginRequest(body: Record<string, string>, options: RequestOptions & { form?: boolean } = {}): Request {
  const headers = consoleHeaders(options);
  if (options.form) {
    headers.set("content-type", "application/x-www-form-urlencoded");
    return new Request(`${CONSOLE_ORIGIN}/api/auth/login`, { method: "POST", headers, body: new URLSearchParams(body) });
  }
  headers.set("content-type", "application/json");
  return new Request(`${CONSOLE_ORIGIN}/api/auth/login`, { method: "POST", headers, body: JSON.stringify(body) });
}

/** "meridian_session=..." from a login response. */
export function cookieOf(res: Response): string {
  return (res.headers.get("set-cookie") ?? "").split(";")[0]!;
}

export interface TrpcResult {
  status: number;
  data: unknown;
  error: { message: string; data: { code: string; httpStatus: number } } | undefined;
}

/** One tRPC call through the real handler (superjson envelope, as the browser sends it). */
export async function trpcCall(
  rt: Parameters<typeof handleTrpcRequest>[0],
  path: string,
  input: unknown,
  options: RequestOptions & { mutation?: boolean; security?: RequestSecurity; auditor?: SecurityAuditor } = {},
): Promise<TrpcResult> {
  const headers = consoleHeaders(options);
  let req: Request;
  if (options.mutation) {
    headers.set("content-type", "application/json");
    req = new Request(`${CONSOLE_ORIGIN}/api/trpc/${path}`, { method: "POST", headers, body: JSON.stringify(superjson.serialize(input)) });
  } else {
    const query = input === undefined ? "" : `?input=${encodeURIComponent(JSON.stringify(superjson.serialize(input)))}`;
    req = new Request(`${CONSOLE_ORIGIN}/api/trpc/${path}${query}`, { headers });
  }
  const res = await handleTrpcRequest(rt, req, {
    ...(options.security ? { security: options.security } : {}),
    ...(options.auditor ? { auditor: options.auditor } : {}),
  });
  const body = (await res.json()) as { result?: { data: unknown }; error?: { json: TrpcResult["error"] } | { message: string } };
  const error =
    body.error && "json" in body.error ? body.error.json : body.error ? { message: body.error.message, data: { code: "", httpStatus: res.status } } : undefined;
  return { status: res.status, data: body.result ? superjson.deserialize(body.result.data as never) : undefined, error };
}
