// The LB admin API, for the console and for peer LBs (docs/ARCHITECTURE.md, "LB credentials").
// Who may call what (admin-auth.ts):
//   GET  /admin/proof?nonce=     anyone: one HMAC of the nonce per LB token held (no secret leaves)
//   GET  /admin/peer?snapshot=N  the console, or a peer LB with its read-only peer credential
//   everything else              the console only (an LB token this LB holds):
//   GET  /admin/state            LbState
//   GET  /admin/config           the LbConfig in use
//   PUT  /admin/config           a newer LbConfig (stale version → 409), persisted for restarts once applied
//                                (a failed save → 500; pushing the same version again retries the save)
//   GET  /admin/telemetry?since=&boot=  NDJSON TelemetryStreamLine stream, resumable from the ring buffer
//                                (a boot id of another LB process serves this one's sequence from the start)
//   POST /admin/flush            clears the prefix index
//   POST /admin/credentials      installs a rotated LB token / retires old ones
// A refusal (401 without a valid credential, 403 for a peer credential elsewhere) is counted and
// logged (auth-refusals.ts).
import { isDeepStrictEqual } from "node:util";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import {
  LB_CREDENTIALS_STATUS_SCHEMA,
  LB_PROOF_SCHEMA,
  NONCE_PATTERN,
  safeParseLbConfig,
  safeParseLbCredentialsUpdate,
  telemetryBoot,
  type LbConfig,
  type LbCredentialsStatus,
  type LbProof,
} from "@meridian/protocol";
import { RoutingInputError } from "@meridian/routing";
import { identifyCaller, unauthorized } from "./admin-auth";
import type { AuthRefusals } from "./auth-refusals";
import type { Balancer } from "./balancer";
import type { ConfigStore } from "./config-store";
import { badRequest, HttpError, notFound, sendError, sendJson } from "./errors";
import { CredentialsNotSaved, type LbCredentials, type UpdateResult } from "./lb-credentials";
import { parseJsonBody, readBody } from "./request";
import { coreNow } from "./core-clock";

const ADMIN_BODY_LIMIT_BYTES = 4 * 1024 * 1024;
const CREDENTIALS_BODY_LIMIT_BYTES = 16 * 1024;

export interface AdminDeps {
  balancer: Balancer;
  store: ConfigStore;
  credentials: LbCredentials;
  refusals: AuthRefusals;
  heartbeatMs: number;
  logger: Logger;
  /** Called with each newly applied config. */
  onConfigApplied?: (config: LbConfig) => void;
}

export async function handleAdmin(req: IncomingMessage, res: ServerResponse, url: URL, deps: AdminDeps): Promise<void> {
  const { balancer } = deps;
  const route = `${req.method ?? "GET"} ${url.pathname}`;
  if (route === "GET /admin/proof") {
    sendJson(res, 200, proof(url, deps));
    return;
  }
  const caller = identifyCaller(req.headers["authorization"], deps.credentials, balancer.config);
  const address = req.socket.remoteAddress ?? "unknown";
  if (caller.kind === "none") {
    req.resume();
    deps.refusals.record("admin", caller.reason, { address, path: url.pathname }, coreNow());
    sendError(res, unauthorized());
    return;
  }
  if (caller.kind === "peer" && route !== "GET /admin/peer") {
    req.resume();
    deps.refusals.record("peer", "forbidden", { address, path: url.pathname, peer: caller.peerId }, coreNow());
    sendError(res, new HttpError(403, "a peer credential may only read GET /admin/peer", "permission_error", "forbidden"));
    return;
  }
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
      const boot = parseBoot(url.searchParams.get("boot"));
      res.writeHead(200, { "content-type": "application/x-ndjson", "cache-control": "no-store", "x-accel-buffering": "no" });
      res.flushHeaders();
      balancer.telemetry.subscribe(res, since, deps.heartbeatMs, boot);
      return;
    }
    case "POST /admin/flush":
      balancer.flushIndex();
      sendJson(res, 200, { flushed: true });
      return;
    case "POST /admin/credentials":
      await updateCredentials(req, res, deps);
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

/** The boot id of the sequence `since` counts in (absent: this process's). */
function parseBoot(value: string | null): string | undefined {
  if (value === null || value === "") return undefined;
  if (!telemetryBoot.safeParse(value).success) throw badRequest("'boot' must be 1-64 characters of A-Z a-z 0-9 _ -", "boot");
  return value;
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
    // The config in use was applied but its save failed: the push answered 500, and this retry of it
    // is the console's way to get it saved. Answering "unchanged" would leave it unsaved for good (a
    // restart would silently return to the old config), so save it now, or answer 500 again.
    if (unsavedVersion.get(deps.store) === current.version) {
      saveApplied(current, deps);
      sendJson(res, 200, { accepted: true, version: current.version });
      return;
    }
    // A retried push of the config already in use is not an error.
    sendJson(res, 200, { accepted: true, version: current.version, unchanged: true });
    return;
  }
  // Applied first, persisted only once it applied: a config this LB cannot run is refused (the LB
  // keeps the one it has) and never saved, so a restart cannot trip over it.
  try {
    void deps.balancer.applyConfig(next);
  } catch (error) {
    if (error instanceof RoutingInputError) throw badRequest(`this LB cannot run the config: ${error.message}`, null, "invalid_config");
    throw error;
  }
  // It runs from here on, saved or not: what follows the running config (client-key series) follows it now.
  deps.onConfigApplied?.(next);
  deps.logger.info({ version: next.version, policy: next.policy, weights: next.weights }, "config applied");
  saveApplied(next, deps);
  sendJson(res, 200, { accepted: true, version: next.version });
}

/** Per state file, the version that runs but could not be saved (absent once saved). Kept beside the
 * store rather than in the handler's deps, which are built per request. */
const unsavedVersion = new WeakMap<ConfigStore, number>();

/** Saves the config that now runs; when that fails (disk full, a read-only or vanished state
 * directory), remembers it as unsaved and answers 500, so the console retries the same push. */
function saveApplied(config: LbConfig, deps: AdminDeps): void {
  try {
    deps.store.save(config);
  } catch (error) {
    unsavedVersion.set(deps.store, config.version);
    const reason = error instanceof Error ? error.message : String(error);
    deps.logger.error({ version: config.version, err: error }, "config applied but not saved: a restart would return to the last saved config");
    throw new HttpError(
      500,
      `config version ${config.version} is running but could not be saved (${reason}); push it again to retry saving it`,
      "server_error",
      "config_not_saved",
    );
  }
  unsavedVersion.delete(deps.store);
}

function proof(url: URL, deps: AdminDeps): LbProof {
  const nonce = url.searchParams.get("nonce") ?? "";
  if (!NONCE_PATTERN.test(nonce)) throw badRequest("'nonce' must be 22 to 128 base64url characters", "nonce");
  const lbId = deps.balancer.config.lbId;
  return { schema: LB_PROOF_SCHEMA, lbId, nonce, proofs: deps.credentials.prove(lbId, nonce) };
}

async function updateCredentials(req: IncomingMessage, res: ServerResponse, deps: AdminDeps): Promise<void> {
  const parsed = safeParseLbCredentialsUpdate(parseJsonBody(await readBody(req, CREDENTIALS_BODY_LIMIT_BYTES)));
  if (!parsed.success) throw badRequest(parsed.error.message, null, "invalid_credentials");
  const { install, retire } = parsed.data;
  const { credentials, logger } = deps;
  let result: UpdateResult;
  try {
    result = credentials.update(install, retire, Date.now());
  } catch (error) {
    // Only a bad token is the console's fault; a disk that failed is ours, and a 5xx makes the
    // console retry (nothing changed, so the retry makes the whole change and saves it).
    if (error instanceof CredentialsNotSaved) throw credentialsNotSaved(error, deps);
    throw badRequest((error as Error).message, "install", "invalid_credentials");
  }
  if (!result.ok) throw CREDENTIALS_REFUSALS[result.refused];
  if (result.installed) logger.info({ keyIds: credentials.keyIds() }, "LB token installed");
  if (result.retired > 0) logger.info({ retired: retire, keyIds: credentials.keyIds() }, "LB token retired");
  const status: LbCredentialsStatus = { schema: LB_CREDENTIALS_STATUS_SCHEMA, lbId: deps.balancer.config.lbId, keyIds: credentials.keyIds() };
  sendJson(res, 200, status);
}

/** Why a credentials update changed nothing (LbCredentials.update judges the whole request first). */
const CREDENTIALS_REFUSALS = {
  token_retired: new HttpError(409, "that token was retired on this LB", "invalid_request_error", "token_retired", "install"),
  too_many_tokens: new HttpError(409, "this LB holds as many tokens as it may; retire one first", "invalid_request_error", "too_many_tokens", "install"),
  last_token: new HttpError(409, "retiring these would leave this LB no token", "invalid_request_error", "last_token", "retire"),
} as const;

function credentialsNotSaved(error: CredentialsNotSaved, deps: AdminDeps): HttpError {
  deps.logger.error({ err: error }, "LB credentials change refused: the credentials file could not be written");
  return new HttpError(500, `${error.message}; send the request again to retry`, "server_error", "credentials_not_saved");
}
