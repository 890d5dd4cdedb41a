// The LB admin API, for the console and for peer LBs. Every route needs the bearer token
// (MERIDIAN_LB_TOKEN), compared in constant time on equal-length SHA-256 digests so neither the
// token's content nor its length leaks through timing. With no token configured, everything is 401.
//   GET  /admin/state            LbState
//   GET  /admin/config           the LbConfig in use
//   PUT  /admin/config           a newer LbConfig (stale version → 409), persisted for restarts
//   GET  /admin/telemetry?since= NDJSON TelemetryStreamLine stream, resumable from the ring buffer
//   POST /admin/flush            clears the prefix index
//   GET  /admin/peer?snapshot=N  PeerReport for peer LBs
import { createHash, timingSafeEqual } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { safeParseLbConfig } from "@meridian/protocol";
import type { Balancer } from "./balancer";
import type { ConfigStore } from "./config-store";
import { badRequest, HttpError, notFound, sendError, sendJson } from "./errors";
import { parseJsonBody, readBody } from "./request";

const ADMIN_BODY_LIMIT_BYTES = 4 * 1024 * 1024;

export function tokenMatches(expected: string | null, header: string | undefined): boolean {
  if (!expected || !header) return false;
  const match = /^Bearer\s+(.+)$/i.exec(header);
  if (!match) return false;
  const given = createHash("sha256")
    .update(match[1] as string)
    .digest();
  const wanted = createHash("sha256").update(expected).digest();
  return timingSafeEqual(given, wanted);
}

export interface AdminDeps {
  balancer: Balancer;
  store: ConfigStore;
  token: string | null;
  heartbeatMs: number;
  logger: Logger;
}

export async function handleAdmin(req: IncomingMessage, res: ServerResponse, url: URL, deps: AdminDeps): Promise<void> {
  if (!tokenMatches(deps.token, req.headers["authorization"])) {
    sendError(res, new HttpError(401, "missing or invalid bearer token", "authentication_error", "invalid_token", null, { "www-authenticate": "Bearer" }));
    return;
  }
  const { balancer } = deps;
  const route = `${req.method ?? "GET"} ${url.pathname}`;
  switch (route) {
    case "GET /admin/state":
      sendJson(res, 200, balancer.state());
      return;
    case "GET /admin/config":
      sendJson(res, 200, balancer.config);
      return;
    case "PUT /admin/config":
      await putConfig(req, res, deps);
      return;
    case "GET /admin/telemetry": {
      const since = parseSince(url.searchParams.get("since"));
      res.writeHead(200, { "content-type": "application/x-ndjson", "cache-control": "no-store", "x-accel-buffering": "no" });
      res.flushHeaders();
      balancer.telemetry.subscribe(res, since, deps.heartbeatMs);
      return;
    }
    case "POST /admin/flush":
      balancer.flushIndex();
      sendJson(res, 200, { flushed: true });
      return;
    case "GET /admin/peer": {
      const requested = Number(url.searchParams.get("snapshot") ?? "0");
      sendJson(res, 200, balancer.peerReport(Number.isInteger(requested) && requested > 0 ? requested : 0));
      return;
    }
    default:
      sendError(res, notFound(`no admin route ${route}`));
  }
}

function parseSince(value: string | null): number {
  if (value === null || value === "") return 0;
  const since = Number(value);
  if (!Number.isInteger(since) || since < 0) throw badRequest("'since' must be a non-negative integer", "since");
  return since;
}

async function putConfig(req: IncomingMessage, res: ServerResponse, deps: AdminDeps): Promise<void> {
  const body = parseJsonBody(await readBody(req, ADMIN_BODY_LIMIT_BYTES));
  const parsed = safeParseLbConfig(body);
  if (!parsed.success) throw badRequest(parsed.error.message, parsed.error.issues[0]?.path ?? null, "invalid_config");
  const next = parsed.data;
  const current = deps.balancer.config;
  if (next.lbId !== current.lbId) {
    throw new HttpError(409, `config is for LB "${next.lbId}", this is "${current.lbId}"`, "invalid_request_error", "wrong_lb", "lbId");
  }
  if (next.version < current.version || (next.version === current.version && !isDeepStrictEqual(next, current))) {
    throw new HttpError(
      409,
      `config version ${next.version} is stale; this LB runs version ${current.version}`,
      "invalid_request_error",
      "stale_version",
      "version",
    );
  }
  if (next.version === current.version) {
    // A retried push of the config already in use is not an error.
    sendJson(res, 200, { accepted: true, version: current.version, unchanged: true });
    return;
  }
  deps.store.save(next);
  void deps.balancer.applyConfig(next);
  deps.logger.info({ version: next.version, policy: next.policy, weights: next.weights }, "config applied");
  sendJson(res, 200, { accepted: true, version: next.version });
}
