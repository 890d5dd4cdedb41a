// The client's request headers an upstream request carries on, as the client sent them.
import type { IncomingHttpHeaders } from "node:http";

/** Client request headers passed on to a replica or peer LB (which passes them on to its replica),
 * with the longest value each: the request id (vLLM makes X-Request-Id its own request id, in its
 * logs and `chatcmpl-<id>`, and with --enable-request-id-headers echoes it, which reaches the client:
 * response-headers.ts) and W3C trace context (vLLM's OpenTelemetry spans join the client's trace;
 * tracestate may be 512 characters). */
const PASSED_REQUEST_HEADERS: ReadonlyArray<readonly [name: string, maxLength: number]> = [
  ["x-request-id", 256],
  ["traceparent", 256],
  ["tracestate", 512],
];
/** Visible ASCII and spaces: a value any engine's HTTP server takes (no control characters, no
 * bytes Node's parser lets through but undici refuses to send). */
const HEADER_SAFE = /^[\x20-\x7e]+$/;

export function passedRequestHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, maxLength] of PASSED_REQUEST_HEADERS) {
    const value = headers[name];
    // An unsafe or oversized value is left out, not refused: the request itself is fine.
    if (typeof value === "string" && value.length <= maxLength && HEADER_SAFE.test(value)) out[name] = value;
  }
  return out;
}
