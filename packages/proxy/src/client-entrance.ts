// The entrance of the inference routes: the client key check (client-keys.ts) before the body is
// read. A refusal is answered here (401, OpenAI's shape), counted and logged; an admitted request
// leaves with what the balancer needs: the Authorization to pass to an engine (if any), where to
// count its tokens, and, for a peer LB's forward, its hop and its client's region. Those two headers
// are a peer's word: from anyone else they are ignored, as an ordinary client could otherwise keep
// its request from ever being forwarded (hop 1) or record itself in any region.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ForwardEntry } from "@meridian/lb-core";
import { HeaderSafeIdSchema, type LbConfig } from "@meridian/protocol";
import { isPolicyName, type PolicyName } from "@meridian/routing";
import type { AuthRefusals } from "./auth-refusals";
import { checkClient, forwardedByPeer, presentedClientKey, type ClientCheck, type ClientIdentity } from "./client-keys";
import type { ClientMetrics } from "./client-metrics";
import { sendError, type HttpError } from "./errors";
import type { ProxyMetrics } from "./metrics";
import type { UsageReport } from "./sse";
import { coreNow } from "./core-clock";

/** What the balancer carries with an admitted request. */
export interface InferenceClient {
  /** Who the request is counted for: the key it was admitted with (client-metrics.ts counts a key
   * only while the config has it). */
  readonly identity: ClientIdentity;
  /** The client's Authorization, passed to replicas; null when it was a Meridian credential. */
  forwardAuthorization: string | null;
  /** 1 when a peer LB forwarded the request here (its peer credential and x-meridian-hop), else 0. */
  hop: number;
  /** The region of the client a peer LB forwarded the request for (x-meridian-src-region, the
   * forwarding LB's region); null for a client's own request (its region is this LB's). */
  clientRegion: string | null;
  /** The peer LB that forwarded the request here (its peer credential's id) and the policy it routed
   * the request by (x-meridian-entry-policy, when it is one); null for a client's own request. */
  entry: ForwardEntry | null;
  /**
   * A client's request (not a peer's forward), checked again under a config pushed since: the
   * refusal a new request with the same credential gets now (recorded as the entrance records one),
   * or null while it still admits it. Its key may have been revoked, or keys made required while it
   * came anonymous. A key the config dropped where keys are not required admits it (as anonymous:
   * keyedUnder), never counted as anonymous traffic (the key's series go with the key: client-metrics.ts).
   */
  recheck(config: LbConfig): HttpError | null;
  /** Whether `config` still admits the client, asked without counting a refusal: a request in flight
   * whose key was revoked finishes where it is, and is not moved off a slow target (in-flight.ts). */
  admits(config: LbConfig): boolean;
  /** Whether `config` admits the client by a client key (for a peer that requires keys), asked
   * without changing who the request is counted for: a key dropped where keys are not required
   * admits it as anonymous. False when `config` does not admit it at all. */
  keyedUnder(config: LbConfig): boolean;
  /** Called once when the request finished, with the status the LB recorded for it (a stream cut
   * after its 200 head is a 502, as in the LB's counters and telemetry) and the usage the engine
   * reported (if any). */
  onFinished(status: number, usage: UsageReport | null): void;
}

export interface EntranceDeps {
  config: LbConfig;
  refusals: AuthRefusals;
  metrics: Pick<ProxyMetrics, "requests" | "rejected">;
  clientMetrics: ClientMetrics;
}

/** 1 when the request says a peer LB forwarded it (x-meridian-hop), else 0: checkClient identifies
 * the peer by its credential on such a request only. */
function claimedHop(req: IncomingMessage): number {
  const header = req.headers["x-meridian-hop"];
  return typeof header === "string" && Number(header) >= 1 ? 1 : 0;
}

/** The forwarding LB's region (x-meridian-src-region), when it is a header-safe id; else null. */
function sourceRegionOf(req: IncomingMessage): string | null {
  const parsed = HeaderSafeIdSchema.safeParse(req.headers["x-meridian-src-region"]);
  return parsed.success ? parsed.data : null;
}

/** The policy the forwarding LB routed the request by (x-meridian-entry-policy), when it names one. */
function entryPolicyOf(req: IncomingMessage): { policy?: PolicyName } {
  const policy = req.headers["x-meridian-entry-policy"];
  return isPolicyName(policy) ? { policy } : {};
}

/** The admitted client, or null after answering the refusal. */
export function admitClient(req: IncomingMessage, res: ServerResponse, path: string, deps: EntranceDeps): InferenceClient | null {
  const authorization = req.headers["authorization"];
  const check = checkClient(authorization, claimedHop(req), deps.config, undefined, req.headers["x-meridian-client-keyed"] === "1");
  const address = req.socket.remoteAddress ?? "unknown";
  const recordRefusal = (refused: Extract<ClientCheck, { ok: false }>): void =>
    deps.refusals.record("client", refused.reason, { address, path, ...(refused.keyId ? { keyId: refused.keyId } : {}) }, coreNow());
  if (!check.ok) {
    // Drain the body so the connection stays usable for the client's next (corrected) request.
    req.resume();
    recordRefusal(check);
    deps.metrics.rejected.inc({ reason: "invalid_api_key" });
    deps.metrics.requests.inc({ policy: deps.config.policy, replica: "none", status: String(check.error.status) });
    sendError(res, check.error);
    return null;
  }
  const { forwardAuthorization } = check;
  const identity = check.identity;
  let checkedUnder = deps.config;
  const fromPeer = forwardedByPeer(identity);
  let counted = false;
  const count = (status: number): void => {
    if (counted) return;
    counted = true;
    deps.clientMetrics.request(identity, status);
  };
  // A request refused before the balancer took it (a bad body, an unknown model) ends with the
  // response alone: its status is the one sent.
  res.once("close", () => count(res.writableFinished ? res.statusCode : 499));
  return {
    get identity() {
      return identity;
    },
    forwardAuthorization,
    hop: fromPeer ? 1 : 0,
    clientRegion: fromPeer ? sourceRegionOf(req) : null,
    entry: fromPeer ? { lbId: identity.keyName, ...entryPolicyOf(req) } : null,
    recheck: (config) => {
      // A peer's forward was admitted on the peer's credential, which this check does not see again.
      if (config === checkedUnder || fromPeer) return null;
      checkedUnder = config;
      const again = checkClient(authorization, 0, config);
      if (!again.ok) {
        recordRefusal(again);
        return again.error;
      }
      return null;
    },
    admits: (config) => fromPeer || checkClient(authorization, 0, config).ok,
    keyedUnder: (config) => {
      if (fromPeer) return false;
      const again = checkClient(authorization, 0, config);
      return again.ok && presentedClientKey(again.identity);
    },
    onFinished: (status, usage) => {
      count(status);
      deps.clientMetrics.usage(identity, usage?.promptTokens ?? null, usage?.completionTokens ?? null);
    },
  };
}
