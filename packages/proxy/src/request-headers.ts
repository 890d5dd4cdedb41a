// The client's request headers an upstream request carries on: trace context as the client sent it,
// and its request id made unique per attempt for an engine.
import { randomBytes } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

/** Client request headers passed on to a replica or peer LB (which passes them on to its replica),
 * with the longest value each: the request id (vLLM makes X-Request-Id its own request id, in its
 * logs and `chatcmpl-<id>`) and W3C trace context (vLLM's OpenTelemetry spans join the client's
 * trace; tracestate may be 512 characters). */
const PASSED_REQUEST_HEADERS: ReadonlyArray<readonly [name: string, maxLength: number]> = [
  ["x-request-id", 256],
  ["traceparent", 256],
  ["tracestate", 512],
];
/** Visible ASCII and spaces: a value any engine's HTTP server takes (no control characters, no
 * bytes Node's parser lets through but undici refuses to send). */
const HEADER_SAFE = /^[\x20-\x7e]+$/;

function passable(headers: IncomingHttpHeaders, name: string, maxLength: number): string | null {
  const value = headers[name];
  // An unsafe or oversized value is left out, not refused: the request itself is fine.
  return typeof value === "string" && value.length <= maxLength && HEADER_SAFE.test(value) ? value : null;
}

/** The client's x-request-id when the LB passes it on (and answers with it), else null. */
export function clientRequestId(headers: IncomingHttpHeaders): string | null {
  return passable(headers, "x-request-id", 256);
}

/**
 * The passed headers for one attempt. An engine gets the client's id with a random suffix: vLLM
 * refuses a request whose id is already running (400 "Request id X already running"), and a service
 * mesh stamps one id on all of a request's outbound calls, so N concurrent calls (or two tenants'
 * clashing ids) on one replica failed each other. A peer LB gets the id as is and suffixes it for
 * its own engine; the client is answered with its own id (response-headers.ts).
 */
export function passedRequestHeaders(headers: IncomingHttpHeaders, toEngine: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, maxLength] of PASSED_REQUEST_HEADERS) {
    const value = passable(headers, name, maxLength);
    if (value !== null) out[name] = value;
  }
  const id = out["x-request-id"];
  // 48 random bits: two attempts collide once in ~10^14 pairs. Base64url stays header-safe.
  if (id !== undefined && toEngine) out["x-request-id"] = `${id}-${randomBytes(6).toString("base64url")}`;
  return out;
}
