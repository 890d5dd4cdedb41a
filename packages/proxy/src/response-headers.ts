// The head a client gets for an upstream's answer: the headers passed on from the replica or peer LB,
// where the answer came from, and the length of a body held whole. Hop-by-hop and length headers are
// the LB's own business.
import { clientRequestId } from "./request-headers";
import type { ExchangeJob, UpstreamExchange } from "./upstream";

/** Response headers copied from upstream. Content-Encoding goes with the body it describes: the LB
 * passes an encoded answer through untouched (upstream.ts contentEncoded). x-request-id is the
 * client's own when it sent one (the engine's echo carries the LB's per-attempt suffix,
 * request-headers.ts), else the engine's. */
const PASSED_RESPONSE_HEADERS = ["content-type", "content-encoding", "cache-control", "x-request-id", "openai-processing-ms", "x-meridian-replica"];

/** Statuses that tell the client to back off: an engine's or gateway's 429, a 503 (an engine's, or a
 * peer LB's own queue_full / shutting_down / no_replica). Their back-off headers are passed on, as the
 * LB's own 503s carry Retry-After: OpenAI SDKs wait by them before retrying. */
const BACK_OFF_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/** Retry-After, its millisecond form (OpenAI's), and the x-ratelimit-* family (limits, remaining, resets). */
function isBackOffHeader(name: string): boolean {
  return name === "retry-after" || name === "retry-after-ms" || name.startsWith("x-ratelimit-");
}

/** The head the client gets: the upstream's passable headers (its back-off headers on a 429 or 503),
 * where the answer came from, and the exact length of a non-stream body held whole (complete by now:
 * it goes out in one write). */
export function clientResponseHeaders<J extends ExchangeJob>(exchange: UpstreamExchange<J>, lbId: string, closeConnection: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of PASSED_RESPONSE_HEADERS) {
    const value = exchange.headers[name];
    if (typeof value === "string") out[name] = value;
  }
  const clientId = clientRequestId(exchange.job.req.headers);
  if (clientId !== null) out["x-request-id"] = clientId;
  if (BACK_OFF_STATUSES.has(exchange.status)) {
    for (const [name, value] of Object.entries(exchange.headers)) {
      if (typeof value === "string" && isBackOffHeader(name.toLowerCase())) out[name.toLowerCase()] = value;
    }
  }
  if (exchange.target.kind === "replica") out["x-meridian-replica"] = exchange.target.id;
  out["x-meridian-lb"] = lbId;
  if (exchange.target.kind === "peer") out["x-meridian-forwarded-to"] = exchange.target.id;
  if (closeConnection) out["connection"] = "close";
  if (!exchange.streaming && !exchange.bodyPassedThrough) out["content-length"] = String(exchange.buffered.reduce((total, chunk) => total + chunk.length, 0));
  return out;
}
